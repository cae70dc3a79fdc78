// rope; see rope.h. cos/sin are computed once per token and pair, then
// applied to every head (simple loops the compiler vectorises; one rounding
// pattern per element whatever the batch). rope_cos_sin + rope_rotate are the
// same two steps taken apart (tests/kernels/decode_fusion_test.cpp checks
// them against rope(), bitwise).
#include "kernels/cpu/rope.h"

#include <cmath>
#include <vector>

namespace kvscope {

void rope_cos_sin(int64_t num_tokens, int64_t head_dim, const int32_t* positions, float base,
                  const float* freq_factors, float* cos_sin) {
  const int64_t half = head_dim / 2;
  thread_local std::vector<float> inv_freq;
  inv_freq.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[i] = std::pow(base, -2.0f * static_cast<float>(i) / static_cast<float>(head_dim));
    if (freq_factors) inv_freq[i] /= freq_factors[i];
  }
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float pos = static_cast<float>(positions[t]);
    float* cs = cos_sin + t * head_dim;
    float* sn = cs + half;
    for (int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[i];
      cs[i] = std::cos(angle);
      sn[i] = std::sin(angle);
    }
  }
}

void rope_rotate(const float* x, float* out, int64_t num_heads, int64_t head_dim, RopeStyle style,
                 const float* cos_sin) {
  const int64_t half = head_dim / 2;
  const float* cs = cos_sin;
  const float* sn = cos_sin + half;
  for (int64_t h = 0; h < num_heads; ++h) {
    const float* v = x + h * head_dim;
    float* o = out + h * head_dim;
    if (style == RopeStyle::kAdjacentPairs) {
      for (int64_t i = 0; i < half; ++i) {
        const float x0 = v[2 * i];
        const float x1 = v[2 * i + 1];
        o[2 * i] = x0 * cs[i] - x1 * sn[i];
        o[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
      }
    } else {
      for (int64_t i = 0; i < half; ++i) {
        const float x0 = v[i];
        const float x1 = v[half + i];
        o[i] = x0 * cs[i] - x1 * sn[i];
        o[half + i] = x0 * sn[i] + x1 * cs[i];
      }
    }
  }
}

void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, const int32_t* positions,
          float base, RopeStyle style, int64_t token_stride, const float* freq_factors) {
  if (token_stride == 0) token_stride = num_heads * head_dim;
  const int64_t half = head_dim / 2;
  thread_local std::vector<float> table;  // inv_freq[half], cos[half], sin[half]
  table.resize(static_cast<size_t>(3 * half));
  float* inv_freq = table.data();
  float* cs = inv_freq + half;
  float* sn = cs + half;
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[i] = std::pow(base, -2.0f * static_cast<float>(i) / static_cast<float>(head_dim));
    if (freq_factors) inv_freq[i] /= freq_factors[i];
  }
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float pos = static_cast<float>(positions[t]);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[i];
      cs[i] = std::cos(angle);
      sn[i] = std::sin(angle);
    }
    // In place: rope_rotate reads each pair before it writes it.
    float* row = x + t * token_stride;
    rope_rotate(row, row, num_heads, head_dim, style, cs);
  }
}

}  // namespace kvscope
