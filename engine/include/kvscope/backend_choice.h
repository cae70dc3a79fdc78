// Which backend runs the model (EngineConfig::backend = cpu | cuda | auto)
// and why, as this build and machine allow. Engine::create and reconfigure
// choose with it (ModelInfo::backend, backend_reason); `kvscope-cli
// model-info` prints it without loading the model.
//   tested by tests/engine/runtime/backend_select_test.cpp
#pragma once

#include <string>

#include "kvscope/engine_config.h"
#include "kvscope/result.h"

namespace kvscope {

struct BackendChoice {
  BackendKind kind = BackendKind::Cpu;  // Cpu or Cuda, never Auto
  // For a person, starting with the backend: "CPU: this build has no CUDA
  // backend (built with KVSCOPE_CUDA=OFF)".
  std::string reason;
};

// auto: CUDA when this build has the CUDA backend and a device is present,
// else the CPU with the reason. cuda where it cannot run: an error saying
// why. Probes the CUDA runtime (device count and name only; no context).
Result<BackendChoice> choose_backend(BackendKind requested);

}  // namespace kvscope
