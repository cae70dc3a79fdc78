// Block-wide reductions and scans over any value type, for kernels whose
// blocks cooperate on one row (sample_tokens.cu). Like device_util.cuh's
// float reductions they are fixed trees (lanes, then warps), so a result
// depends only on the values and the block size, never on timing; no atomics.
// Every function is called by all threads of the block and ends with a
// barrier, so its 32-entry shared scratch can be reused at once.
#pragma once

#include "kernels/cuda/device_util.cuh"

namespace kvscope::cuda {

struct Sum {
  template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct Min {
  template <typename T> __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
  template <typename T> __device__ T operator()(T a, T b) const { return b > a ? b : a; }
};

// op over the block; every thread gets the result. blockDim.x is a multiple of 32.
template <typename T, typename Op>
__device__ inline T block_reduce(T v, T identity, Op op, T* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T total = lane < static_cast<int>(blockDim.x / kWarpSize) ? scratch[lane] : identity;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) total = op(total, __shfl_xor_sync(0xffffffffu, total, offset));
  __syncthreads();
  return total;
}

// Sum of v over the threads before this one (thread order), in a fixed order.
__device__ inline double block_exclusive_scan(double v, double* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  double x = v;  // inclusive scan within the warp
  for (int offset = 1; offset < kWarpSize; offset *= 2) {
    const double y = __shfl_up_sync(0xffffffffu, x, offset);
    if (lane >= offset) x += y;
  }
  double before = __shfl_up_sync(0xffffffffu, x, 1);
  if (lane == 0) before = 0.0;
  if (lane == kWarpSize - 1) scratch[warp] = x;
  __syncthreads();
  if (warp == 0) {  // inclusive scan of the warp totals; lane reads and writes only scratch[lane]
    double s = lane < static_cast<int>(blockDim.x / kWarpSize) ? scratch[lane] : 0.0;
    for (int offset = 1; offset < kWarpSize; offset *= 2) {
      const double y = __shfl_up_sync(0xffffffffu, s, offset);
      if (lane >= offset) s += y;
    }
    scratch[lane] = s;
  }
  __syncthreads();
  const double result = (warp > 0 ? scratch[warp - 1] : 0.0) + before;
  __syncthreads();
  return result;
}

}  // namespace kvscope::cuda
