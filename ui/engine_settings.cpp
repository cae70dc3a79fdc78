// Engine knobs <-> QSettings (see engine_settings.h).
#include "engine_settings.h"

#include <QSettings>

namespace kvscope::ui {

kvscope::EngineConfig loadEngineConfig(QSettings& s) {
  kvscope::EngineConfig c;
  s.beginGroup(QStringLiteral("engine"));
  c.model_path = s.value(QStringLiteral("model_path"), QString()).toString().toStdString();
  c.num_threads = s.value(QStringLiteral("threads"), c.num_threads).toInt();
  c.block_size = s.value(QStringLiteral("block_size"), c.block_size).toInt();
  c.kv_budget_bytes = s.value(QStringLiteral("kv_budget_mib"), qlonglong(c.kv_budget_bytes >> 20)).toLongLong() << 20;
  c.paged = s.value(QStringLiteral("paged"), c.paged).toBool();
  c.prefix_caching = s.value(QStringLiteral("prefix_caching"), c.prefix_caching).toBool();
  c.max_seqs = s.value(QStringLiteral("max_seqs"), c.max_seqs).toInt();
  s.endGroup();
  return c;
}

void saveEngineConfig(QSettings& s, const kvscope::EngineConfig& c) {
  s.beginGroup(QStringLiteral("engine"));
  s.setValue(QStringLiteral("model_path"), QString::fromStdString(c.model_path));
  s.setValue(QStringLiteral("threads"), c.num_threads);
  s.setValue(QStringLiteral("block_size"), c.block_size);
  s.setValue(QStringLiteral("kv_budget_mib"), qlonglong(c.kv_budget_bytes >> 20));
  s.setValue(QStringLiteral("paged"), c.paged);
  s.setValue(QStringLiteral("prefix_caching"), c.prefix_caching);
  s.setValue(QStringLiteral("max_seqs"), c.max_seqs);
  s.endGroup();
}

}  // namespace kvscope::ui
