// Engine knobs <-> QSettings, recent models (see engine_settings.h).
#include "engine_settings.h"

#include <limits>

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace kvscope::ui {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// Budgets are stored in MiB; anything larger would overflow bytes in int64.
constexpr int64_t kMaxMiB = std::numeric_limits<int64_t>::max() / kMiB;

void addProblem(QStringList* problems, const QString& problem) {
  qWarning("kvscope: engine settings: %s", qPrintable(problem));
  if (problems) problems->append(problem);
}

// Puts EngineConfig's default back into one field; false for None.
bool resetField(kvscope::EngineConfig& c, EngineField field) {
  const kvscope::EngineConfig d;
  switch (field) {
    case EngineField::None: return false;
    case EngineField::ModelPath: c.model_path = d.model_path; return true;
    case EngineField::Threads: c.num_threads = d.num_threads; return true;
    case EngineField::BlockSize: c.block_size = d.block_size; return true;
    case EngineField::KvBudget: c.kv_budget_bytes = d.kv_budget_bytes; return true;
    case EngineField::NumBlocks: c.num_blocks = d.num_blocks; return true;
    case EngineField::MaxSeqs: c.max_seqs = d.max_seqs; return true;
    case EngineField::MaxBatchedTokens: c.max_batched_tokens = d.max_batched_tokens; return true;
    case EngineField::MaxModelLen: c.max_model_len = d.max_model_len; return true;
    case EngineField::SwapSpace: c.swap_space_bytes = d.swap_space_bytes; return true;
  }
  return false;
}

// Reads the "engine" group's values one at a time; a value that does not
// parse keeps the default and reports a problem.
class GroupReader {
 public:
  GroupReader(QSettings& settings, QStringList* problems) : settings_(settings), problems_(problems) {}

  template <typename Int>
  void readInt(const char* key, Int& out, int64_t lo = std::numeric_limits<Int>::min(),
               int64_t hi = std::numeric_limits<Int>::max()) {
    if (!settings_.contains(QLatin1String(key))) return;
    bool ok = false;
    const qlonglong value = text(key).toLongLong(&ok);
    if (!ok) return bad(key, QStringLiteral("is not a whole number"));
    if (value < lo || value > hi) {
      const bool type_limits = lo == std::numeric_limits<Int>::min() && hi == std::numeric_limits<Int>::max();
      return bad(key, type_limits ? QStringLiteral("is too large") : QStringLiteral("is out of range [%1, %2]").arg(lo).arg(hi));
    }
    out = static_cast<Int>(value);
  }
  void readMiB(const char* key, int64_t& bytes, int64_t lo_mib) {
    int64_t mib = bytes / kMiB;
    readInt(key, mib, lo_mib, kMaxMiB);
    bytes = mib * kMiB;
  }
  void readBool(const char* key, bool& out) {
    if (!settings_.contains(QLatin1String(key))) return;
    const QString value = text(key).toLower();
    static const QStringList kTrue = {QStringLiteral("true"), QStringLiteral("1"), QStringLiteral("yes"),
                                      QStringLiteral("on")};
    static const QStringList kFalse = {QStringLiteral("false"), QStringLiteral("0"), QStringLiteral("no"),
                                       QStringLiteral("off")};
    if (kTrue.contains(value)) out = true;
    else if (kFalse.contains(value)) out = false;
    else bad(key, QStringLiteral("is not true or false"));
  }
  template <typename Enum>
  void readEnum(const char* key, Enum& out, std::optional<Enum> (*parse)(const QString&), const QString& allowed) {
    if (!settings_.contains(QLatin1String(key))) return;
    if (const std::optional<Enum> value = parse(text(key))) out = *value;
    else bad(key, QStringLiteral("is not one of %1").arg(allowed));
  }
  QString text(const char* key) const { return settings_.value(QLatin1String(key)).toString().trimmed(); }

 private:
  void bad(const char* key, const QString& what) {
    addProblem(problems_, QStringLiteral("engine/%1 = \"%2\" %3; using the default")
                              .arg(QLatin1String(key), text(key), what));
  }
  QSettings& settings_;
  QStringList* problems_;
};

}  // namespace

EngineField engineFieldOf(const std::string& message) {
  // EngineConfig::validate() (engine/src/engine_config.cpp) starts each range
  // message with the knob's name; tests/ui/engine_settings_test.cpp checks
  // that every field still maps, so a reworded message fails there.
  static const std::pair<const char*, EngineField> kPrefixes[] = {
      {"threads", EngineField::Threads},
      {"block size", EngineField::BlockSize},
      {"KV blocks", EngineField::NumBlocks},
      {"KV budget", EngineField::KvBudget},
      {"max sequences", EngineField::MaxSeqs},
      {"max batched tokens", EngineField::MaxBatchedTokens},
      {"max model length", EngineField::MaxModelLen},
      {"no model", EngineField::ModelPath},
  };
  for (const auto& [prefix, field] : kPrefixes) {
    if (message.rfind(prefix, 0) == 0) return field;
  }
  return EngineField::None;
}

std::optional<EngineProblem> engineConfigProblem(const kvscope::EngineConfig& config, bool check_model_file) {
  if (const kvscope::Status status = config.validate(); !status.ok()) {
    const EngineField field = engineFieldOf(status.error());
    // validate() checks the model path last, so skipping it hides no other problem.
    if (field != EngineField::ModelPath || check_model_file)
      return EngineProblem{field, QString::fromStdString(status.error())};
  }
  if (config.swap_space_bytes < 0)
    return EngineProblem{EngineField::SwapSpace, QStringLiteral("swap space must be >= 0")};
  if (check_model_file) {
    const QString path = QString::fromStdString(config.model_path);
    if (!QFileInfo::exists(path))
      return EngineProblem{EngineField::ModelPath, QStringLiteral("no such model file or folder: %1").arg(path)};
  }
  return std::nullopt;
}

bool sameEngineKnobs(const kvscope::EngineConfig& a, const kvscope::EngineConfig& b) {
  return a.model_path == b.model_path && a.num_threads == b.num_threads && a.block_size == b.block_size &&
         a.kv_budget_bytes == b.kv_budget_bytes && a.num_blocks == b.num_blocks && a.max_seqs == b.max_seqs &&
         a.max_batched_tokens == b.max_batched_tokens && a.max_model_len == b.max_model_len && a.paged == b.paged &&
         a.prefix_caching == b.prefix_caching && a.policy == b.policy && a.preemption == b.preemption &&
         a.swap_space_bytes == b.swap_space_bytes;
}

std::optional<kvscope::SchedulingPolicy> schedulingPolicyFromName(const QString& name) {
  for (const auto policy : {kvscope::SchedulingPolicy::Continuous, kvscope::SchedulingPolicy::Static}) {
    if (name.trimmed().compare(QLatin1String(kvscope::scheduling_policy_name(policy)), Qt::CaseInsensitive) == 0)
      return policy;
  }
  return std::nullopt;
}

std::optional<kvscope::PreemptionMode> preemptionModeFromName(const QString& name) {
  for (const auto mode : {kvscope::PreemptionMode::Recompute, kvscope::PreemptionMode::Swap}) {
    if (name.trimmed().compare(QLatin1String(kvscope::preemption_mode_name(mode)), Qt::CaseInsensitive) == 0)
      return mode;
  }
  return std::nullopt;
}

kvscope::EngineConfig loadEngineConfig(QSettings& s, QStringList* problems) {
  kvscope::EngineConfig c;
  s.beginGroup(QStringLiteral("engine"));
  GroupReader r(s, problems);
  c.model_path = r.text("model_path").toStdString();
  r.readInt("threads", c.num_threads);
  r.readInt("block_size", c.block_size);
  r.readMiB("kv_budget_mib", c.kv_budget_bytes, 1);
  r.readInt("num_blocks", c.num_blocks);
  r.readInt("max_seqs", c.max_seqs);
  r.readInt("max_batched_tokens", c.max_batched_tokens);
  r.readInt("max_model_len", c.max_model_len);
  r.readBool("paged", c.paged);
  r.readBool("prefix_caching", c.prefix_caching);
  r.readEnum("policy", c.policy, &schedulingPolicyFromName, QStringLiteral("continuous, static"));
  r.readEnum("preemption", c.preemption, &preemptionModeFromName, QStringLiteral("recompute, swap"));
  r.readMiB("swap_space_mib", c.swap_space_bytes, 0);
  s.endGroup();

  // Values that parse can still be out of range: put back the default of each
  // field the checks name until they pass (each field at most once).
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::optional<EngineProblem> problem = engineConfigProblem(c, /*check_model_file=*/false);
    if (!problem) return c;
    addProblem(problems, QStringLiteral("%1; using the default").arg(problem->message));
    if (!resetField(c, problem->field)) break;
  }
  kvscope::EngineConfig defaults;
  defaults.model_path = c.model_path;
  return defaults;
}

void saveEngineConfig(QSettings& s, const kvscope::EngineConfig& c) {
  s.beginGroup(QStringLiteral("engine"));
  s.setValue(QStringLiteral("model_path"), QString::fromStdString(c.model_path));
  s.setValue(QStringLiteral("threads"), c.num_threads);
  s.setValue(QStringLiteral("block_size"), c.block_size);
  s.setValue(QStringLiteral("kv_budget_mib"), qlonglong(c.kv_budget_bytes / kMiB));
  s.setValue(QStringLiteral("num_blocks"), c.num_blocks);
  s.setValue(QStringLiteral("max_seqs"), c.max_seqs);
  s.setValue(QStringLiteral("max_batched_tokens"), c.max_batched_tokens);
  s.setValue(QStringLiteral("max_model_len"), c.max_model_len);
  s.setValue(QStringLiteral("paged"), c.paged);
  s.setValue(QStringLiteral("prefix_caching"), c.prefix_caching);
  s.setValue(QStringLiteral("policy"), QLatin1String(kvscope::scheduling_policy_name(c.policy)));
  s.setValue(QStringLiteral("preemption"), QLatin1String(kvscope::preemption_mode_name(c.preemption)));
  s.setValue(QStringLiteral("swap_space_mib"), qlonglong(c.swap_space_bytes / kMiB));
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
