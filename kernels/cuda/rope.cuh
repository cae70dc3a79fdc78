// Rotary position embedding on the GPU, in place, both pair styles
// (kernels/rope_style.h) and optional per-frequency factors (Llama 3.x rope
// scaling). Mirrors kernels/cpu/rope.h and kernels/reference/rope.cpp;
// tested by tests/kernels/cuda/rope_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/rope_style.h"

namespace kvscope::cuda {

// x: [num_tokens][token_stride] device f32, head h of token t at
// x + t * token_stride + h * head_dim (token_stride 0 means num_heads * head_dim);
// positions: [num_tokens] device int32; freq_factors: [head_dim / 2] device f32 or nullptr.
// Pair i of a head rotates by pos * base^(-2i/head_dim) / freq_factors[i].
// Preconditions: head_dim even and > 0, num_heads > 0, token_stride 0 or
// >= num_heads * head_dim, base > 0.
cudaError_t rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, const int32_t* positions,
                 float base, RopeStyle style, int64_t token_stride, const float* freq_factors,
                 cudaStream_t stream);

}  // namespace kvscope::cuda
