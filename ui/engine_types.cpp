// Metatype registration for the engine value types (see engine_types.h).
#include "engine_types.h"

namespace kvscope::ui {

void registerEngineMetaTypes() {
  qRegisterMetaType<kvscope::EngineConfig>();
  qRegisterMetaType<kvscope::ModelInfo>();
  qRegisterMetaType<kvscope::SamplingParams>();
  qRegisterMetaType<SnapshotPtr>();
  qRegisterMetaType<ChatHistory>();
  qRegisterMetaType<WorkloadSpec>();
  qRegisterMetaType<FinishInfo>();
  qRegisterMetaType<EventBatch>();
  qRegisterMetaType<TextSpans>();
}

}  // namespace kvscope::ui
