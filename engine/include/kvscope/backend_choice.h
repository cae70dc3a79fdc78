// Which backend runs the model (EngineConfig::backend = cpu | cuda | auto)
// and why, as this build and machine allow. Engine::create and reconfigure
// choose with it (ModelInfo::backend, backend_reason); `kvscope-cli
// model-info` prints it without loading the model.
//   tested by tests/engine/runtime/backend_select_test.cpp
#pragma once

#include <optional>
#include <string>

#include "kvscope/engine_config.h"
#include "kvscope/kv_plan.h"
#include "kvscope/result.h"

namespace kvscope {

struct BackendChoice {
  BackendKind kind = BackendKind::Cpu;  // Cpu or Cuda, never Auto
  // For a person, starting with the backend: "CPU: this build has no CUDA
  // backend (built with KVSCOPE_CUDA=OFF)".
  std::string reason;
};

// Whether this build has the CUDA backend (KVSCOPE_CUDA=ON). Without it,
// backend = auto always runs on the CPU, and the GPU settings do nothing.
bool build_has_cuda();

// auto: CUDA when this build has the CUDA backend and a device is present,
// else the CPU with the reason. cuda where it cannot run: an error saying
// why. Probes the CUDA runtime (device count and name only; no context).
Result<BackendChoice> choose_backend(BackendKind requested);

// choose_backend(config.backend) checked against the model at model_path as
// Engine::create checks it: where that picks CUDA for a model the CUDA
// backend cannot run, auto is the CPU with the reason and cuda an error.
// Maps the model file only when the choice is CUDA. (model-info's answer.)
Result<BackendChoice> choose_backend_for_model(const EngineConfig& config, const std::string& model_path);

// The GPU's free and total memory when `choice` is CUDA, as plan_kv's
// DeviceMemory with weight_bytes given (held_bytes 0); nullopt on the CPU.
// Asks the device, which creates the CUDA context on it.
std::optional<DeviceMemory> probe_device_memory(const BackendChoice& choice, int64_t weight_bytes);

}  // namespace kvscope
