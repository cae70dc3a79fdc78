// The two halves of overlapped launches (overlapped_launch.h): what every
// kernel does first, and how every launcher launches. Internal to
// kernels/cuda.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda/device_shape.h"
#include "kernels/cuda/overlapped_launch.h"

namespace kvscope::cuda {

// The first statement of every kernel: wait until the kernel before this one
// on the stream has completed and its memory is visible (a no-op when this
// one was launched plainly). Without let_next_kernel_start, the next kernel
// is scheduled as this one's blocks exit, which still hides its launch
// behind this one's end.
__device__ inline void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the next kernel be scheduled now: its blocks take their places on the
// SMs beside this one's and wait there (wait_for_previous_kernel) until this
// one completes. Right for the short kernels (norms, rotary, combines,
// sampling: a decode step's chain of few-microsecond launches). The long ones
// (the matmuls, attention's partitions) do not call it: when every kernel
// did, 64 sequences on the tensor cores took 3.88 ms a step on an H200
// against 3.48 ms with no overlap; with the long kernels leaving it to their
// exit, 3.57 ms (3.56 vs 3.41 in another lease), while one sequence keeps
// its 5% (docs/cuda.md).
__device__ inline void let_next_kernel_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Both, for a short kernel.
__device__ inline void await_previous_kernel() {
  wait_for_previous_kernel();
  let_next_kernel_start();
}

// Whether a launch now may overlap the previous kernel: switched on, and a
// Hopper or later device.
inline bool overlap_applies() { return overlapped_launches() && current_device_shape().major >= 9; }

// kernel<<<grid, block, smem, stream>>>(args...), as an overlapped launch
// where it applies, in clusters of `cluster_x` blocks along x when that is
// more than 1 (matvec_mma.cu's split). Errors as cudaGetLastError() reports
// them.
template <typename... Params, typename... Args>
cudaError_t launch_clusters(unsigned cluster_x, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                            cudaStream_t stream, Args&&... args) {
  const bool overlap = overlap_applies();
  if (!overlap && cluster_x <= 1) {
    kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
    return cudaGetLastError();
  }
  cudaLaunchAttribute attributes[2] = {};
  unsigned n = 0;
  if (overlap) {
    attributes[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster_x > 1) {
    attributes[n].id = cudaLaunchAttributeClusterDimension;
    attributes[n].val.clusterDim.x = cluster_x;
    attributes[n].val.clusterDim.y = 1;
    attributes[n].val.clusterDim.z = 1;
    ++n;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// Every launcher's launch: kernel<<<grid, block, smem, stream>>>(args...),
// overlapped where that applies.
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                          Args&&... args) {
  return launch_clusters(1, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

}  // namespace kvscope::cuda
