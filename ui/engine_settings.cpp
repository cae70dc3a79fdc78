// Engine knobs <-> QSettings, recent models (see engine_settings.h).
#include "engine_settings.h"

#include <limits>

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace kvscope::ui {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Keys of files written before the setting table: budgets in whole MiB.
struct LegacyKey {
  const char* old_key;
  const char* key;
};
constexpr LegacyKey kLegacyMiBKeys[] = {{"kv_budget_mib", "kv_budget"}, {"swap_space_mib", "swap_space"}};
// Keys of settings replaced by another that takes none of their values: read
// as nothing (the new setting keeps its default) and dropped at the next
// save. gpu_fused_norms (on / off, off until measured on a GPU) became the
// choice gpu_norm_fusion, whose default, auto, fuses where it was faster.
constexpr const char* kRetiredKeys[] = {"gpu_fused_norms"};

// To the caller's list, which it reports (the window's status bar, the
// terminal for --settings); to the terminal when there is no list.
void addProblem(QStringList* problems, const QString& problem) {
  if (problems) problems->append(problem);
  else qWarning("kvscope: engine settings: %s", qPrintable(problem));
}

bool isEngineKey(const QString& key) {
  for (const LegacyKey& legacy : kLegacyMiBKeys)
    if (key == QLatin1String(legacy.old_key)) return true;
  for (const char* retired : kRetiredKeys)
    if (key == QLatin1String(retired)) return true;
  return kvscope::find_setting(key.toStdString()) != nullptr;
}

QString stored(QSettings& s, const QString& key) { return s.value(key).toString().trimmed(); }

}  // namespace

QList<EngineProblem> engineConfigProblems(const kvscope::EngineConfig& config, bool check_model_file) {
  QList<EngineProblem> problems;
  for (const kvscope::SettingProblem& p : config.validate()) {
    // Without the file check, an empty path is not a problem yet either.
    if (p.field == "model_path" && !check_model_file) continue;
    problems.append({QString::fromStdString(p.field), QString::fromStdString(p.message)});
  }
  if (check_model_file && !config.model_path.empty()) {
    const QString path = QString::fromStdString(config.model_path);
    if (!QFileInfo::exists(path))
      problems.append({QStringLiteral("model_path"), QStringLiteral("no such model file or folder: %1").arg(path)});
  }
  if (check_model_file && config.spec == kvscope::SpecMethod::Draft && !config.spec_draft_model.empty()) {
    const QString path = QString::fromStdString(config.spec_draft_model);
    if (!QFileInfo::exists(path))
      problems.append({QStringLiteral("spec_draft_model"), QStringLiteral("no such draft model file: %1").arg(path)});
  }
  return problems;
}

kvscope::EngineConfig loadEngineConfig(QSettings& s, QStringList* problems) {
  kvscope::EngineConfig c;
  s.beginGroup(QStringLiteral("engine"));
  // A misspelt key would otherwise leave its setting at the default unseen.
  for (const QString& key : s.childKeys()) {
    if (!isEngineKey(key)) addProblem(problems, QStringLiteral("engine/%1 is not a setting; ignored").arg(key));
  }
  for (const LegacyKey& legacy : kLegacyMiBKeys) {
    const QString old_key = QLatin1String(legacy.old_key);
    if (!s.contains(old_key) || s.contains(QLatin1String(legacy.key))) continue;
    bool ok = false;
    const qlonglong mib = stored(s, old_key).toLongLong(&ok);
    if (ok && mib >= 0 && mib <= std::numeric_limits<int64_t>::max() / kMiB)
      kvscope::find_setting(legacy.key)->set(c, kvscope::SettingValue(int64_t{mib} * kMiB));
    else
      addProblem(problems, QStringLiteral("engine/%1 = \"%2\" is not a whole number of MiB; using the default")
                               .arg(old_key, stored(s, old_key)));
  }
  for (const kvscope::SettingSpec& spec : kvscope::engine_settings()) {
    const QString key = QString::fromStdString(spec.key);
    if (!s.contains(key)) continue;
    const kvscope::Result<kvscope::SettingValue> value = spec.parse(stored(s, key).toStdString());
    if (value.ok()) spec.set(c, *value);
    else addProblem(problems, QStringLiteral("engine/%1; using the default").arg(QString::fromStdString(value.error())));
  }
  s.endGroup();

  // Values that parse can still be out of range or not fit together: put back
  // the default of each setting a problem names (a problem naming none
  // leaves only the defaults).
  for (const kvscope::SettingProblem& p : c.validate()) {
    if (p.field == "model_path") continue;  // the loader reports a missing model
    addProblem(problems, QStringLiteral("engine/%1: %2; using the default")
                             .arg(QString::fromStdString(p.field), QString::fromStdString(p.message)));
    const kvscope::SettingSpec* spec = kvscope::find_setting(p.field);
    if (!spec) {
      kvscope::EngineConfig defaults;
      defaults.model_path = c.model_path;
      return defaults;
    }
    spec->set(c, spec->default_value());
  }
  return c;
}

void saveEngineConfig(QSettings& s, const kvscope::EngineConfig& c) {
  s.beginGroup(QStringLiteral("engine"));
  for (const QString& key : s.childKeys()) {
    if (!kvscope::find_setting(key.toStdString())) s.remove(key);  // old names, settings since removed
  }
  for (const kvscope::SettingSpec& spec : kvscope::engine_settings())
    s.setValue(QString::fromStdString(spec.key), QString::fromStdString(spec.format(spec.get(c))));
  s.endGroup();
}

std::optional<kvscope::EngineConfig> loadEngineConfigFromFile(const QString& ini_path, QString* error,
                                                              QStringList* problems) {
  auto fail = [&](const QString& message) {
    if (error) *error = message;
    return std::nullopt;
  };
  const QFileInfo info(ini_path);
  if (!info.exists()) return fail(QStringLiteral("settings file %1 does not exist").arg(ini_path));
  if (!info.isFile()) return fail(QStringLiteral("settings file %1 is not a file").arg(ini_path));
  if (!info.isReadable()) return fail(QStringLiteral("settings file %1 cannot be read").arg(ini_path));
  QSettings settings(ini_path, QSettings::IniFormat);
  if (settings.status() == QSettings::FormatError)
    return fail(QStringLiteral("settings file %1 is not an INI file").arg(ini_path));
  if (settings.status() == QSettings::AccessError)
    return fail(QStringLiteral("settings file %1 cannot be read").arg(ini_path));
  const QStringList groups = settings.childGroups();
  if (!groups.contains(QStringLiteral("engine")) && !groups.contains(QStringLiteral("chat")) && problems)
    problems->append(QStringLiteral("it has no [engine] or [chat] group: every setting keeps its default"));
  kvscope::EngineConfig config = loadEngineConfig(settings, problems);
  const QString model = QString::fromStdString(config.model_path);
  if (!model.isEmpty() && QFileInfo(model).isRelative())
    config.model_path = QDir::cleanPath(info.absoluteDir().filePath(model)).toStdString();
  return config;
}

QStringList recentModels(QSettings& settings) {
  QStringList existing;
  for (const QString& path : settings.value(QStringLiteral("models/recent")).toStringList()) {
    if (!path.isEmpty() && QFileInfo::exists(path) && !existing.contains(path)) existing.append(path);
    if (existing.size() == kMaxRecentModels) break;
  }
  return existing;
}

void addRecentModel(QSettings& settings, const QString& path) {
  if (path.isEmpty()) return;
  // One spelling per file, so "a/../m.gguf" and "m.gguf" are not two entries.
  const QString clean = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
  QStringList list = recentModels(settings);
  list.removeAll(clean);
  list.prepend(clean);
  while (list.size() > kMaxRecentModels) list.removeLast();
  settings.setValue(QStringLiteral("models/recent"), list);
}

}  // namespace kvscope::ui
