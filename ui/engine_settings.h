// Every user knob of EngineConfig <-> QSettings (group "engine"), the list of
// recently used models (group "models"), and the checks the settings dialog
// shares with the loader.
//
// Stored keys (INI names): model_path, threads, block_size, kv_budget_mib,
// num_blocks, max_seqs, max_batched_tokens, max_model_len, paged,
// prefix_caching, policy ("continuous" | "static"), preemption ("recompute" |
// "swap"), swap_space_mib. Budgets are whole MiB. record_snapshots is not
// stored: the app sets it, the user does not.
//
// A hand-edited file cannot crash or wedge the app: a value that does not
// parse, or that EngineConfig::validate() refuses, falls back to its default,
// and each fallback is logged and reported in *problems.
//   tested by tests/ui/engine_settings_test.cpp
#pragma once

#include <optional>

#include <QString>
#include <QStringList>

#include "kvscope/engine_config.h"

class QSettings;

namespace kvscope::ui {

// The EngineConfig knob a problem is about; the dialog shows the message next
// to that knob's control.
enum class EngineField {
  None,
  ModelPath,
  Threads,
  BlockSize,
  KvBudget,
  NumBlocks,
  MaxSeqs,
  MaxBatchedTokens,
  MaxModelLen,
  SwapSpace,
};

struct EngineProblem {
  EngineField field = EngineField::None;
  QString message;
};

// The field an EngineConfig::validate() message names (EngineField::None when
// it names none this code knows).
EngineField engineFieldOf(const std::string& message);

// EngineConfig::validate() plus the app's own rules (swap space >= 0 and, when
// check_model_file, a model path that exists); nullopt when all pass.
std::optional<EngineProblem> engineConfigProblem(const kvscope::EngineConfig& config, bool check_model_file);

// True when every user knob is equal (record_snapshots is ignored): a caller
// re-creates the engine only when this is false.
bool sameEngineKnobs(const kvscope::EngineConfig& a, const kvscope::EngineConfig& b);

// Readable names for the enums, as stored; nullopt for an unknown name.
std::optional<kvscope::SchedulingPolicy> schedulingPolicyFromName(const QString& name);
std::optional<kvscope::PreemptionMode> preemptionModeFromName(const QString& name);

// Reads the stored knobs over EngineConfig's defaults (model_path included;
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
