// Helpers shared by the kernel tests: random weights of any type, normalised
// error, and the CPU levels this machine can run.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/reference/half.h"
#include "kernels/tensor_type.h"

namespace kvscope::test {

inline const std::vector<TensorType>& all_weight_types() {
  static const std::vector<TensorType> types = {
      TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q4_0, TensorType::Q4_1,
      TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0, TensorType::Q2_K, TensorType::Q3_K,
      TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
  return types;
}

// Byte offsets of the f16 scale fields inside one block (docs/model-formats.md layouts).
inline std::vector<int> f16_scale_offsets(TensorType t) {
  switch (t) {
    case TensorType::Q4_0: case TensorType::Q5_0: case TensorType::Q8_0: return {0};
    case TensorType::Q4_1: case TensorType::Q5_1: case TensorType::Q4_K: case TensorType::Q5_K: return {0, 2};
    case TensorType::Q2_K: return {80, 82};
    case TensorType::Q3_K: return {108};
    case TensorType::Q6_K: return {208};
    default: return {};
  }
}

// num_rows rows of row_len random weights: random quant bits with sane f16
// scales in [-0.1, 0.1] for block types, N(0, 0.1)-ish floats otherwise.
inline std::vector<uint8_t> random_weights(TensorType t, int64_t num_rows, int64_t row_len, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t bytes = row_bytes(t, row_len) * static_cast<size_t>(num_rows);
  std::vector<uint8_t> w(bytes);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  const int64_t n = num_rows * row_len;
  if (t == TensorType::F32) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = u(rng);
      std::memcpy(w.data() + 4 * i, &v, 4);
    }
    return w;
  }
  if (t == TensorType::F16 || t == TensorType::BF16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = (t == TensorType::F16) ? f32_to_fp16(u(rng)) : f32_to_bf16(u(rng));
      std::memcpy(w.data() + 2 * i, &h, 2);
    }
    return w;
  }
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  const TensorTypeTraits& tr = traits_of(t);
  for (size_t blk = 0; blk < bytes / static_cast<size_t>(tr.block_bytes); ++blk) {
    for (int off : f16_scale_offsets(t)) {
      const uint16_t h = f32_to_fp16(u(rng));
      std::memcpy(w.data() + blk * static_cast<size_t>(tr.block_bytes) + off, &h, 2);
    }
  }
  return w;
}

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// ||a - b|| / ||b|| (0 when both are zero).
// x as the int8 kernels see it: per block of 32, d = max|x| / 127 and
// q = round-half-even(x * 127 / max|x|), value q * d.
inline std::vector<float> as_int8_activations(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0.0f;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (size_t i = b; i < b + 32; ++i) out[i] = std::nearbyint(x[i] * id) * d;
  }
  return out;
}

inline double normalised_error(const float* a, const float* b, int64_t n) {
  double num = 0.0;
  double den = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  if (den == 0.0) return std::sqrt(num);
  return std::sqrt(num / den);
}

inline bool bitwise_equal(const float* a, const float* b, int64_t n) {
  return std::memcmp(a, b, static_cast<size_t>(n) * sizeof(float)) == 0;
}

// Every CPU level this machine runs, lowest first.
inline std::vector<CpuLevel> available_levels() {
  std::vector<CpuLevel> levels;
  for (int l = 0; l <= static_cast<int>(detected_cpu_level()); ++l) levels.push_back(static_cast<CpuLevel>(l));
  return levels;
}

// Sets a CPU level for the scope, restoring the previous one after.
class ScopedCpuLevel {
 public:
  explicit ScopedCpuLevel(CpuLevel level) : saved_(cpu_level()) { set_cpu_level(level); }
  ~ScopedCpuLevel() { set_cpu_level(saved_); }
  ScopedCpuLevel(const ScopedCpuLevel&) = delete;
  ScopedCpuLevel& operator=(const ScopedCpuLevel&) = delete;

 private:
  CpuLevel saved_;
};

}  // namespace kvscope::test
