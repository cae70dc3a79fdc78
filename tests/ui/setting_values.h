// Values for walking the engine's setting table (kvscope/setting_table.h) in
// the ui tests: for every row, values other than its default that its range
// allows, so a test written once covers each row added later; and the
// settings two configs differ in, for failure messages.
//   used by tests/ui/engine_settings_test.cpp and settings_dialog_test.cpp
#pragma once

#include <string>
#include <vector>

#include <QString>
#include <QStringList>

#include "kvscope/engine_config.h"
#include "kvscope/setting_table.h"

namespace kvscope::test {

inline constexpr int64_t kMiB = int64_t{1} << 20;

// A value strictly inside an Int or Bytes row's range and not its default;
// whole MiB for Bytes when the dialog is to show it (it edits MiB), else a
// few bytes past a MiB so that exact byte counts must survive.
inline int64_t middleValue(const SettingSpec& spec, bool whole_mib) {
  int64_t v = spec.min + (spec.max - spec.min) / 2;
  if (spec.type == SettingType::Bytes) v = v / kMiB * kMiB + (whole_mib ? 0 : 12345);
  if (SettingValue(v) == spec.default_value()) v += spec.type == SettingType::Bytes ? kMiB : 1;
  return v;
}

// Every value, other than the default, that a test should push through a
// front end for `spec`: Int and Bytes: the row's min, max and a middle value
// (those that differ from the default; with whole_mib, the whole MiB nearest
// inside the bounds); Bool: the other one; Choice: every
// other choice; Path: `path`.
inline std::vector<SettingValue> otherValues(const SettingSpec& spec, const std::string& path, bool whole_mib) {
  std::vector<SettingValue> values;
  const SettingValue d = spec.default_value();
  switch (spec.type) {
    case SettingType::Int:
    case SettingType::Bytes: {
      int64_t lo = spec.min, hi = spec.max;
      if (spec.type == SettingType::Bytes && whole_mib) {  // the bounds a MiB box can show
        lo = (spec.min + kMiB - 1) / kMiB * kMiB;
        hi = spec.max / kMiB * kMiB;
      }
      for (int64_t v : {lo, hi, middleValue(spec, whole_mib)}) {
        if (SettingValue(v) != d) values.emplace_back(v);
      }
      break;
    }
    case SettingType::Bool: values.emplace_back(!std::get<bool>(d)); break;
    case SettingType::Choice:
      for (const std::string& c : spec.choices) {
        if (SettingValue(c) != d) values.emplace_back(c);
      }
      break;
    case SettingType::Path: values.emplace_back(path); break;
  }
  return values;
}

// A config with every row away from its default (its middle value, the
// other bool, the last choice, `path`); record_snapshots is set as well, to
// show that it passes through where it should.
inline EngineConfig unusualConfig(const std::string& path, bool whole_mib) {
  EngineConfig c;
  for (const SettingSpec& spec : engine_settings()) {
    if (spec.type == SettingType::Int || spec.type == SettingType::Bytes)
      spec.set(c, middleValue(spec, whole_mib));
    else
      spec.set(c, otherValues(spec, path, whole_mib).back());
  }
  c.record_snapshots = true;
  return c;
}

// Every Path row but the model set to `path`: a base for walking rows one at
// a time, so that a choice that needs a file (spec = draft needs
// spec_draft_model) is valid alone. Such rows apply only under their choice,
// so the file changes nothing else.
inline void fillOtherPaths(EngineConfig& c, const std::string& path) {
  for (const SettingSpec& spec : engine_settings()) {
    if (spec.type == SettingType::Path && spec.key != "model_path") spec.set(c, path);
  }
}

// "differ: key, key": the settings whose values differ, for a failure message.
inline QString changedText(const EngineConfig& a, const EngineConfig& b) {
  QStringList keys;
  for (const std::string& key : changed_settings(a, b)) keys.append(QString::fromStdString(key));
  return QStringLiteral("differ: ") + keys.join(QStringLiteral(", "));
}

}  // namespace kvscope::test
