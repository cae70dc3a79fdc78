// The engine settings <-> QSettings (group "engine"), `kvscope --settings
// FILE`, the list of recently used models (group "models"), and the checks the
// settings dialog shares with the loader. Everything is generated from the
// engine's setting table (kvscope/setting_table.h): one INI key per row, named
// after the row's key, in the row's text form (`kv_budget=512M`,
// `paged=true`, `policy=continuous`). record_snapshots is not stored: the app
// sets it, the user does not. Files written before the table stored budgets
// as whole MiB (`kv_budget_mib`, `swap_space_mib`); those are still read.
//
// A hand-edited file cannot crash or wedge the app: a value that does not
// parse, or that EngineConfig::validate() refuses, falls back to its default,
// and each fallback is logged and reported in *problems.
//   tested by tests/ui/engine_settings_test.cpp
#pragma once

#include <optional>

#include <QList>
#include <QString>
#include <QStringList>

#include "kvscope/engine_config.h"

class QSettings;

namespace kvscope::ui {

// A problem with one setting: `field` is its SettingSpec::key (empty when no
// single setting is at fault); the dialog shows the message next to that
// setting's control.
struct EngineProblem {
  QString field;
  QString message;
};

// EngineConfig::validate() plus, when check_model_file, a model path (and
// with spec = draft a draft model path) that exists; empty when all pass.
QList<EngineProblem> engineConfigProblems(const kvscope::EngineConfig& config, bool check_model_file);

// Reads the stored settings over EngineConfig's defaults (model_path included;
// a missing model file is not a problem here, loading the engine reports it).
kvscope::EngineConfig loadEngineConfig(QSettings& settings, QStringList* problems = nullptr);
void saveEngineConfig(QSettings& settings, const kvscope::EngineConfig& config);

// For `kvscope --settings FILE`: an INI file with the same groups. nullopt with
// *error set when the file is missing, unreadable or not INI; otherwise the
// config, with per-value fallbacks in *problems as above. A relative
// model_path is taken relative to the file's folder.
std::optional<kvscope::EngineConfig> loadEngineConfigFromFile(const QString& ini_path, QString* error,
                                                              QStringList* problems = nullptr);

// Recently used models, most recent first, at most kMaxRecentModels, no
// duplicates; paths that no longer exist are left out when read.
inline constexpr int kMaxRecentModels = 8;
QStringList recentModels(QSettings& settings);
void addRecentModel(QSettings& settings, const QString& path);

}  // namespace kvscope::ui
