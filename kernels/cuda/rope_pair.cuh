// The rotation of one rotary pair, shared by the rope kernel (rope.cu) and
// the fused rotary + K/V write (rope_write_kv.cu), so the two give the same
// bits. The angle is computed as the reference computes it, so results agree
// with it to rounding even at large positions, where an error of one ulp in
// the frequency becomes pos * ulp in the angle:
//   exponent  -2i/head_dim in f32 (the same two operations),
//   inv_freq  base^exponent in f64 rounded to f32 (what a correctly rounded
//             powf gives; glibc's is, for all but rare cases),
//   angle     f32 pos * inv_freq, then cos / sin and the rotation in f64.
#pragma once

#include <cstdint>

namespace kvscope::cuda {

// Rotates pair i of the head at v (head_dim floats) by position pos.
// Adjacent pairs: (v[2i], v[2i+1]); half split: (v[i], v[i + head_dim/2]).
__device__ inline void rotate_pair(float* v, int64_t i, int64_t head_dim, int32_t pos, float base,
                                   bool adjacent_pairs, const float* freq_factors) {
  const int64_t half = head_dim / 2;
  const float exponent = -2.0f * static_cast<float>(i) / static_cast<float>(head_dim);
  float inv_freq = static_cast<float>(pow(static_cast<double>(base), static_cast<double>(exponent)));
  if (freq_factors) inv_freq = __fdiv_rn(inv_freq, freq_factors[i]);
  const float angle = __fmul_rn(static_cast<float>(pos), inv_freq);
  double s, c;
  sincos(static_cast<double>(angle), &s, &c);
  const int64_t a = adjacent_pairs ? 2 * i : i;
  const int64_t b = adjacent_pairs ? 2 * i + 1 : i + half;
  const double x0 = v[a];
  const double x1 = v[b];
  v[a] = static_cast<float>(x0 * c - x1 * s);
  v[b] = static_cast<float>(x0 * s + x1 * c);
}

}  // namespace kvscope::cuda
