// The engine knobs the desktop app persists (QSettings, group "engine"):
// threads, block size, KV budget, paged on/off, prefix caching, max seqs,
// and the model path. Everything else keeps EngineConfig's defaults.
#pragma once

#include <QString>

#include "kvscope/engine_config.h"

class QSettings;

namespace kvscope::ui {

// Reads the stored knobs over EngineConfig's defaults (model_path included).
kvscope::EngineConfig loadEngineConfig(QSettings& settings);
void saveEngineConfig(QSettings& settings, const kvscope::EngineConfig& config);

}  // namespace kvscope::ui
