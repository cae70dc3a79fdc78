// RMSNorm on the GPU, plain and fused with the residual add that precedes it
// in every pre-norm transformer block. Mirrors kernels/cpu/rms_norm.h and
// kernels/reference/rms_norm.cpp; tested by tests/kernels/cuda/rms_norm_test.cpp.
// One warp per token row; the sum of squares is row_norm.cuh's fixed order in
// f32, so a row's result does not depend on the batch, and the matmuls that
// normalise their own input (matvec_q.cuh's InputNorm) give the same bits.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvscope::cuda {

// out[t][i] = x[t][i] / sqrt(mean_i(x[t]^2) + eps) * weight[i].
// x, out: [num_tokens][n] device f32; weight: [n]. out may alias x.
// Preconditions: num_tokens >= 0, n > 0, eps >= 0, pointers non-null when num_tokens > 0.
cudaError_t rms_norm(const float* x, const float* weight, int64_t num_tokens, int64_t n, float eps, float* out,
                     cudaStream_t stream);

// residual[t] += delta[t] (in place), then out[t] = rms_norm(residual[t]) * weight.
// residual, delta, out: [num_tokens][n]; weight: [n]. out may alias delta.
// The add is one f32 addition per element, as kernels/cpu/add.h does it.
cudaError_t add_rms_norm(float* residual, const float* delta, const float* weight, int64_t num_tokens, int64_t n,
                         float eps, float* out, cudaStream_t stream);

}  // namespace kvscope::cuda
