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

// rope() in two steps, for a caller that rotates many rows at the same
// positions (every layer of a step with the same base, q and k): the bits
// are rope()'s.
// cos_sin: [num_tokens][head_dim], token t's cos of pair i at [t][i] and its
// sin at [t][head_dim / 2 + i]; the other arguments as for rope().
void rope_cos_sin(int64_t num_tokens, int64_t head_dim, const int32_t* positions, float base,
                  const float* freq_factors, float* cos_sin);
// Rotates num_heads heads of one token, x[h * head_dim + ...] into out (which
// may be x), by that token's cos_sin row ([head_dim]).
void rope_rotate(const float* x, float* out, int64_t num_heads, int64_t head_dim, RopeStyle style,
                 const float* cos_sin);

}  // namespace kvscope
