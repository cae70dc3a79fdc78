// Argmax kernel; see argmax.cuh. One block per row: each thread scans a
// strided slice keeping (value, index), then a fixed shuffle / shared-memory
// tree merges the candidates with the rule "larger value, or equal value and
// smaller index", which is associative and commutative, so the result is the
// exact argmax whatever the order of merging.
#include "kernels/cuda/argmax.cuh"

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 512;

struct Candidate {
  float value;
  int32_t index;  // -1: none yet
};

// Whether a beats b. NaN values are never taken as candidates.
__device__ inline bool beats(const Candidate& a, const Candidate& b) {
  if (a.index < 0) return false;
  if (b.index < 0) return true;
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}

__device__ inline Candidate warp_best(Candidate c) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    Candidate other;
    other.value = __shfl_xor_sync(0xffffffffu, c.value, offset);
    other.index = __shfl_xor_sync(0xffffffffu, c.index, offset);
    if (beats(other, c)) c = other;
  }
  return c;
}

__global__ void argmax_kernel(const float* logits, int64_t vocab_size, int32_t* ids) {
  await_previous_kernel();
  __shared__ Candidate scratch[32];
  const int64_t r = blockIdx.x;
  const float* row = logits + r * vocab_size;  // logits[r][i] = logits + r * vocab_size + i
  Candidate best{-INFINITY, -1};
  for (int64_t i = threadIdx.x; i < vocab_size; i += blockDim.x) {
    const Candidate c{row[i], static_cast<int32_t>(i)};
    if (!isnan(c.value) && beats(c, best)) best = c;
  }
  best = warp_best(best);
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  if (lane == 0) scratch[warp] = best;
  __syncthreads();
  if (warp == 0) {
    Candidate c = lane < static_cast<int>(blockDim.x / kWarpSize) ? scratch[lane] : Candidate{-INFINITY, -1};
    c = warp_best(c);
    if (lane == 0) ids[r] = c.index;
  }
}

}  // namespace

cudaError_t argmax_rows(const float* logits, int64_t num_rows, int64_t vocab_size, int32_t* ids,
                        cudaStream_t stream) {
  KVSCOPE_CUDA_REQUIRE("argmax_rows", vocab_size > 0 && vocab_size <= 0x7fffffff);
  KVSCOPE_CUDA_REQUIRE("argmax_rows", num_rows >= 0 && num_rows <= 0x7fffffff);
  if (num_rows == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE("argmax_rows", logits != nullptr && ids != nullptr);
  launch_kernel(argmax_kernel, static_cast<unsigned int>(num_rows), kThreads, 0, stream, logits, vocab_size, ids);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
