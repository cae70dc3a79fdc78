// The rotation of one rotary pair, shared by the rope kernel (rope.cu) and
// the fused rotary + K/V write (rope_write_kv.cu), so the two give the same
// bits. The angle is computed as the reference computes it, so results agree
// with it to rounding even at large positions, where an error of one ulp in
// the frequency becomes pos * ulp in the angle:
//   exponent  -2i/head_dim in f32 (the same two operations),
//   inv_freq  base^exponent in f64 rounded to f32 (what a correctly rounded
//             powf gives; glibc's is, for all but rare cases),
//   angle     f32 pos * inv_freq, then cos / sin and the rotation in f64.
// The angle and its sine and cosine depend on the position and the pair's
// index only, not on the head: the fused kernel computes them once per
// (token, pair index) and rotates every head's pair with them.
#pragma once

#include <cstdint>

namespace kvscope::cuda {

// The angle of pair i (of head_dim / 2) at position pos.
__device__ inline float rope_angle(int64_t i, int64_t head_dim, int32_t pos, float base, const float* freq_factors) {
  const float exponent = -2.0f * static_cast<float>(i) / static_cast<float>(head_dim);
  float inv_freq = static_cast<float>(pow(static_cast<double>(base), static_cast<double>(exponent)));
  if (freq_factors) inv_freq = __fdiv_rn(inv_freq, freq_factors[i]);
  return __fmul_rn(static_cast<float>(pos), inv_freq);
}

// Rotates pair i of the head at v (head_dim floats) by the angle whose sine
// and cosine are s and c. Adjacent pairs: (v[2i], v[2i+1]); half split:
// (v[i], v[i + head_dim/2]). Every operation is an explicit rounding, so no
// compiler contraction can differ between the kernels that call it.
__device__ inline void rotate_pair_by(float* v, int64_t i, int64_t head_dim, bool adjacent_pairs, double s, double c) {
  const int64_t a = adjacent_pairs ? 2 * i : i;
  const int64_t b = adjacent_pairs ? 2 * i + 1 : i + head_dim / 2;
  const double x0 = v[a];
  const double x1 = v[b];
  v[a] = static_cast<float>(__dsub_rn(__dmul_rn(x0, c), __dmul_rn(x1, s)));
  v[b] = static_cast<float>(__dadd_rn(__dmul_rn(x0, s), __dmul_rn(x1, c)));
}

// Rotates pair i of the head at v by position pos.
__device__ inline void rotate_pair(float* v, int64_t i, int64_t head_dim, int32_t pos, float base,
                                   bool adjacent_pairs, const float* freq_factors) {
  double s, c;
  sincos(static_cast<double>(rope_angle(i, head_dim, pos, base, freq_factors)), &s, &c);
  rotate_pair_by(v, i, head_dim, adjacent_pairs, s, c);
}

}  // namespace kvscope::cuda
