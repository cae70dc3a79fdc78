// SwiGLU / GeGLU kernels; see act_and_mul.cuh. Bandwidth-bound (12 bytes per
// element), one element per thread of a grid-stride loop; expf is the
// accurate library function, not the __expf intrinsics, so the result
// stays within a few ulp of the f64 reference.
#include "kernels/cuda/act_and_mul.cuh"

#include "kernels/cuda/activations.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned int kMaxBlocks = 65535;  // grid-stride beyond this

template <typename Act>
__global__ void act_and_mul_kernel(const float* gate, const float* up, int64_t n, float* out) {
  await_previous_kernel();
  const Act act;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    // Read both inputs before writing: out may alias gate or up.
    const float g = gate[i];
    const float u = up[i];
    out[i] = __fmul_rn(act(g), u);
  }
}

template <typename Act>
cudaError_t launch(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream, const char* op) {
  KVSCOPE_CUDA_REQUIRE(op, n >= 0);
  if (n == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, gate != nullptr && up != nullptr && out != nullptr);
  const unsigned int blocks = n / kThreads + 1 < kMaxBlocks ? num_blocks_for(n, kThreads) : kMaxBlocks;
  launch_kernel(act_and_mul_kernel<Act>, blocks, kThreads, 0, stream, gate, up, n, out);
  return cudaGetLastError();
}

}  // namespace

cudaError_t silu_mul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream) {
  return launch<Silu>(gate, up, n, out, stream, "silu_mul");
}

cudaError_t gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream) {
  return launch<GeluTanh>(gate, up, n, out, stream, "gelu_tanh_mul");
}

}  // namespace kvscope::cuda
