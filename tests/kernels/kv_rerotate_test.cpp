// Re-rotating cached keys (kernels/cpu/kv_rerotate.h) against a plain
// double-precision rotation, on odd sizes, both pair styles, with and without
// Llama 3 freq factors, for every cache type; and the property a context
// shift relies on: a key roped at p and turned by -d equals the key roped at
// p - d.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/kv_cache_type.h"
#include "kernels/cpu/kv_rerotate.h"
#include "kernels/cpu/rope.h"

namespace kvscope {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// The plain reference: every pair turned by delta * base^(-2i/d) / factor_i in double.
void reference_rerotate(std::vector<float>& rows, int64_t num_rows, int64_t num_heads, int64_t head_dim,
                        int32_t delta, double base, RopeStyle style, const float* factors) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int64_t h = 0; h < num_heads; ++h) {
      float* v = rows.data() + (r * num_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        double freq = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
        if (factors) freq /= factors[i];
        const double c = std::cos(delta * freq), s = std::sin(delta * freq);
        float& a = style == RopeStyle::kAdjacentPairs ? v[2 * i] : v[i];
        float& b = style == RopeStyle::kAdjacentPairs ? v[2 * i + 1] : v[i + half];
        const double x0 = a, x1 = b;
        a = static_cast<float>(x0 * c - x1 * s);
        b = static_cast<float>(x0 * s + x1 * c);
      }
    }
  }
}

std::vector<uint8_t> store_rows(KvCacheType type, const std::vector<float>& x, int64_t num_rows, int64_t width) {
  const size_t rb = kv_row_bytes(type, width);
  std::vector<uint8_t> out(rb * static_cast<size_t>(num_rows));
  for (int64_t r = 0; r < num_rows; ++r) store_kv_row(type, x.data() + r * width, width, out.data() + r * rb);
  return out;
}

std::vector<float> load_rows(KvCacheType type, const std::vector<uint8_t>& bytes, int64_t num_rows, int64_t width) {
  const size_t rb = kv_row_bytes(type, width);
  std::vector<float> out(static_cast<size_t>(num_rows * width));
  for (int64_t r = 0; r < num_rows; ++r) {
    load_kv_row(type, bytes.data() + r * rb, static_cast<int32_t>(width), out.data() + r * width);
  }
  return out;
}

// How far one storing of a value of magnitude |v| in `type` may move it
// (half a step), with `block_max` the largest magnitude of its q8_0 block.
double half_step(KvCacheType type, double v, double block_max) {
  switch (type) {
    case KvCacheType::F32: return 0.0;
    case KvCacheType::F16: return std::ldexp(std::fabs(v), -11) + 1e-7;
    case KvCacheType::BF16: return std::ldexp(std::fabs(v), -8) + 1e-30;
    case KvCacheType::Q8_0: return 0.5 * block_max / 127.0 * (1.0 + 1e-3);
  }
  return 0.0;
}

// f32 rotation error: the angle delta * f is formed in f32 (relative error a
// few ulp of it), so |error| <= ~|delta| * 2^-22 * |pair| plus the roundings
// of the products; 1e-6 * (|delta| + 4) * |pair| covers both with margin.
double f32_bound(int32_t delta, double pair_norm) { return 1e-6 * (std::abs(delta) + 4) * pair_norm + 1e-7; }

struct Case {
  int64_t num_rows, num_heads, head_dim;
  int32_t delta;
};

TEST(KvRerotate, MatchesDoubleReferenceOnOddSizesEveryTypeBothStyles) {
  const Case cases[] = {{1, 1, 2, -1}, {7, 3, 6, -17}, {17, 1, 34, -1000}, {5, 2, 14, 5}, {3, 5, 10, -64}};
  const Case q8_cases[] = {{1, 1, 32, -1}, {7, 3, 32, -17}, {17, 1, 64, -1000}, {5, 2, 96, 5}};
  const KvCacheType types[] = {KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0};
  double max_f32_err = 0.0;
  for (KvCacheType type : types) {
    for (const Case& c : type == KvCacheType::Q8_0 ? std::vector<Case>(std::begin(q8_cases), std::end(q8_cases))
                                                   : std::vector<Case>(std::begin(cases), std::end(cases))) {
      for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalfSplit}) {
        for (bool with_factors : {false, true}) {
          SCOPED_TRACE(::testing::Message() << kv_cache_type_name(type) << " rows " << c.num_rows << " heads "
                                            << c.num_heads << " dim " << c.head_dim << " delta " << c.delta
                                            << " style " << static_cast<int>(style) << " factors " << with_factors);
          const int64_t width = c.num_heads * c.head_dim;
          std::vector<float> factors(static_cast<size_t>(c.head_dim / 2));
          for (size_t i = 0; i < factors.size(); ++i) {
            factors[i] = 1.0f + 7.0f * static_cast<float>(i) / static_cast<float>(factors.size());
          }
          const float* ff = with_factors ? factors.data() : nullptr;
          const std::vector<float> x = random_values(static_cast<size_t>(c.num_rows * width),
                                                     static_cast<uint32_t>(c.num_rows * 31 + width));
          std::vector<uint8_t> bytes = store_rows(type, x, c.num_rows, width);
          std::vector<float> want = load_rows(type, bytes, c.num_rows, width);  // what the cache held
          const std::vector<float> before = want;
          reference_rerotate(want, c.num_rows, c.num_heads, c.head_dim, c.delta, 10000.0, style, ff);
          rerotate_kv_rows(type, bytes.data(), c.num_rows, c.num_heads, c.head_dim, c.delta, 10000.0f, style, ff);
          const std::vector<float> got = load_rows(type, bytes, c.num_rows, width);
          for (int64_t r = 0; r < c.num_rows; ++r) {
            for (int64_t e = 0; e < width; ++e) {
              const size_t at = static_cast<size_t>(r * width + e);
              double block_max = 0.0;  // the q8_0 block of the rotated value
              const int64_t b0 = e / 32 * 32;
              const float* want_row = want.data() + r * width;
              const float* before_row = before.data() + r * width;
              for (int64_t j = b0; j < std::min(width, b0 + 32); ++j) {
                block_max = std::max(block_max, std::fabs(static_cast<double>(want_row[j])));
              }
              double norm = 0.0;  // the head's length: a rotation keeps it
              const int64_t h0 = e / c.head_dim * c.head_dim;
              for (int64_t j = h0; j < h0 + c.head_dim; ++j) norm += before_row[j] * before_row[j];
              norm = std::sqrt(norm);
              const double err = std::fabs(static_cast<double>(got[at]) - want[at]);
              if (type == KvCacheType::F32) max_f32_err = std::max(max_f32_err, err);
              ASSERT_LE(err, f32_bound(c.delta, norm) + half_step(type, want[at], block_max)) << "element " << at;
            }
          }
        }
      }
    }
  }
  std::printf("max |f32 rerotation - double reference| = %.3g\n", max_f32_err);
}

TEST(KvRerotate, TurningByMinusDeltaMovesAKeyToTheEarlierPosition) {
  // What a context shift relies on: rope at p, then turned by -d, equals rope at p - d.
  const int64_t heads = 3, dim = 18, rows = 9;
  for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalfSplit}) {
    const std::vector<float> x = random_values(static_cast<size_t>(rows * heads * dim), 7);
    std::vector<int32_t> at_p(rows), at_p_minus_d(rows);
    const int32_t d = 48;
    for (int32_t r = 0; r < rows; ++r) {
      at_p[static_cast<size_t>(r)] = 100 + 13 * r;
      at_p_minus_d[static_cast<size_t>(r)] = at_p[static_cast<size_t>(r)] - d;
    }
    std::vector<float> moved = x, fresh = x;
    rope(moved.data(), rows, heads, dim, at_p.data(), 10000.0f, style);
    std::vector<uint8_t> bytes = store_rows(KvCacheType::F32, moved, rows, heads * dim);
    rerotate_kv_rows(KvCacheType::F32, bytes.data(), rows, heads, dim, -d, 10000.0f, style);
    moved = load_rows(KvCacheType::F32, bytes, rows, heads * dim);
    rope(fresh.data(), rows, heads, dim, at_p_minus_d.data(), 10000.0f, style);
    double max_err = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      max_err = std::max(max_err, std::fabs(static_cast<double>(moved[i]) - fresh[i]));
    }
    // Positions up to ~200: each angle is formed in f32 (ulp of 200 rad is
    // 1.5e-5), three times (p, d, p - d), on values of norm ~8.
    EXPECT_LT(max_err, 1e-3) << "style " << static_cast<int>(style);
    std::printf("style %d: max |rope(p) then -d - rope(p - d)| = %.3g\n", static_cast<int>(style), max_err);
  }
}

}  // namespace
}  // namespace kvscope
