// probe_cuda(); see cuda_probe.h. Built in both builds: with the CUDA runtime
// when KVSCOPE_HAVE_CUDA is 1, else the answer that there is none.
#include "runtime/cuda_probe.h"

#if KVSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#endif

namespace kvscope {

CudaProbe probe_cuda([[maybe_unused]] bool with_memory) {
  CudaProbe p;
#if KVSCOPE_HAVE_CUDA
  p.built_with_cuda = true;
  int count = 0;
  if (const cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    p.problem = fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(err));
    return p;
  }
  if (count == 0) {
    p.problem = "the CUDA runtime sees no device";
    return p;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t err = cudaGetDeviceProperties(&prop, 0); err != cudaSuccess) {
    p.problem = fmt::format("cudaGetDeviceProperties: {}", cudaGetErrorString(err));
    return p;
  }
  p.num_devices = count;
  p.device_name = prop.name;
  p.total_bytes = prop.totalGlobalMem;
  if (with_memory) {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(0) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      p.free_bytes = free_bytes;
      p.total_bytes = total_bytes;
    }
  }
#else
  p.problem = "built without CUDA";
#endif
  return p;
}

}  // namespace kvscope
