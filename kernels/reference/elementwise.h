// Reference elementwise ops (one token / one row at a time), plain scalar code.
// Each lives in its own .cpp named after the op; the fast versions are in
// kernels/cpu/ and tests/kernels/op_table_test.cpp compares the two.
#pragma once

#include <cstdint>

#include "kernels/rope_style.h"

namespace kvscope {


// out[n] = x / sqrt(mean(x^2) + eps) * weight. Sum of squares in double.
void rms_norm_ref(const float* x, const float* weight, int64_t n, float eps, float* out);

// In place on x[num_heads][head_dim] of one token at position pos.
// Pair i rotates by angle pos * base^(-2i/head_dim) / freq_factors[i]
// (freq_factors: [head_dim / 2], or nullptr for none), computed in f32.
void rope_ref(float* x, int64_t num_heads, int64_t head_dim, int64_t pos, float base,
              RopeStyle style, const float* freq_factors = nullptr);

// out[n] = exp(x - max) / sum, in double.
void softmax_ref(const float* x, int64_t n, float* out);

// out[n] = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
void silu_mul_ref(const float* gate, const float* up, int64_t n, float* out);

// out[n] = gelu_tanh(gate) * up,
// gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))).
void gelu_tanh_mul_ref(const float* gate, const float* up, int64_t n, float* out);

// out[n] = a + b.
void add_ref(const float* a, const float* b, int64_t n, float* out);

}  // namespace kvscope
