// choose_backend with the probe given, so that every case (no CUDA in the
// build, no device, a device) can be tested on any machine. The public
// choose_backend (kvscope/backend_choice.h) passes probe_cuda()'s answer.
//   tested by tests/engine/runtime/backend_select_test.cpp
#pragma once

#include "kvscope/backend_choice.h"
#include "runtime/cuda_probe.h"

namespace kvscope {

Result<BackendChoice> choose_backend(BackendKind requested, const CudaProbe& probe);

}  // namespace kvscope
