// choose_backend with the probe given, so that every case (no CUDA in the
// build, no device, a device) can be tested on any machine. The public
// choose_backend (kvscope/backend_choice.h) passes probe_cuda()'s answer.
//   tested by tests/engine/runtime/backend_select_test.cpp
#pragma once

#include "kvscope/backend_choice.h"
#include "model/model_weights.h"
#include "runtime/cuda_probe.h"

namespace kvscope {

Result<BackendChoice> choose_backend(BackendKind requested, const CudaProbe& probe);

// `choice` (choose_backend's) settled against the model: when it is CUDA and
// the CUDA backend cannot run `weights` (cuda_unsupported), backend = auto
// becomes the CPU with that reason and backend = cuda an error naming it.
Result<BackendChoice> settle_backend(BackendChoice choice, const ModelWeights& weights, const EngineConfig& config);

}  // namespace kvscope
