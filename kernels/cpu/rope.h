// Rotary position embedding for a batch of tokens, all heads at once, in place.
// Pair i of a head rotates by pos * base^(-2i/head_dim) / freq_factors[i]
// (angle in f32). The factors are Llama 3.x's rope scaling: the model file
// stores them per frequency (rope_freqs.weight) so that low frequencies are
// stretched to the longer context and high ones kept.
// Reference: kernels/reference/rope.cpp (RopeStyle is declared there).
#pragma once

#include <cstdint>

#include "kernels/reference/elementwise.h"

namespace kvscope {

// x: [num_tokens][token_stride] with heads at x[t * token_stride + h * head_dim]
// (token_stride 0 means num_heads * head_dim); positions: [num_tokens].
void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, const int32_t* positions,
          float base, RopeStyle style, int64_t token_stride = 0, const float* freq_factors = nullptr);

}  // namespace kvscope
