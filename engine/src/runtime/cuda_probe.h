// probe_cuda(): what CUDA devices this process can see. The one place the
// engine calls the CUDA runtime outside the CUDA backend, compiled against it
// only when the build has it (KVSCOPE_CUDA=ON, which defines
// KVSCOPE_HAVE_CUDA=1 for the engine); otherwise it says "built without
// CUDA". runtime/backend_select.h turns it into a choice of backend.
//   tested by tests/engine/runtime/backend_select_test.cpp
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvscope {

struct CudaProbe {
  bool built_with_cuda = false;  // this build can call the CUDA runtime
  int32_t num_devices = 0;       // visible devices (CUDA_VISIBLE_DEVICES applies)
  std::string device_name;       // device 0's, when num_devices > 0
  size_t total_bytes = 0;        // device 0's memory (with_memory only)
  size_t free_bytes = 0;         // and what is free of it now (with_memory only)
  std::string problem;           // why num_devices is 0 ("built without CUDA", the runtime's error)
};

// with_memory: also ask device 0 for its free memory, which creates a CUDA
// context on it (slow, and it holds device memory until the process ends);
// the name and count alone do not.
CudaProbe probe_cuda(bool with_memory = false);

}  // namespace kvscope
