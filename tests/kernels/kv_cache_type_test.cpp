// KV cache types: the stored row converts back to what the reference
// conversions give (f16 / bf16 exactly, q8_0 within half a quantisation
// step), on odd lengths; and attention over a cache of each type equals the
// double reference on the converted K/V, with the invariance rules (block
// size, cascade vs flat, threads) holding bitwise within the type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/kv_cache_type.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/reference/attention.h"
#include "kernels/reference/half.h"

namespace kvscope {
namespace {

constexpr KvCacheType kTypes[] = {KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0};

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

std::vector<float> round_trip(KvCacheType type, const std::vector<float>& x) {
  std::vector<uint8_t> stored(kv_row_bytes(type, static_cast<int64_t>(x.size())));
  store_kv_row(type, x.data(), static_cast<int64_t>(x.size()), stored.data());
  std::vector<float> back(x.size());
  load_kv_row(type, stored.data(), static_cast<int32_t>(x.size()), back.data());
  return back;
}

TEST(KvCacheType, SizesAndNames) {
  EXPECT_EQ(kv_row_bytes(KvCacheType::F32, 192), 768u);
  EXPECT_EQ(kv_row_bytes(KvCacheType::F16, 192), 384u);
  EXPECT_EQ(kv_row_bytes(KvCacheType::BF16, 192), 384u);
  EXPECT_EQ(kv_row_bytes(KvCacheType::Q8_0, 192), 6u * 34u);
  EXPECT_TRUE(kv_type_fits_head_dim(KvCacheType::Q8_0, 64));
  EXPECT_FALSE(kv_type_fits_head_dim(KvCacheType::Q8_0, 24));
  EXPECT_TRUE(kv_type_fits_head_dim(KvCacheType::F16, 24));
  EXPECT_STREQ(kv_cache_type_name(KvCacheType::Q8_0), "q8_0");
}

TEST(KvCacheType, HalfTypesRoundTripAsTheReference) {
  for (int32_t n : {1, 7, 8, 13, 64, 101}) {
    std::vector<float> x = random_values(static_cast<size_t>(n), 10 + n, 3.0f);
    x[0] = 65504.0f * 2;  // overflows f16 to inf; bf16 keeps it
    const std::vector<float> h = round_trip(KvCacheType::F16, x);
    const std::vector<float> b = round_trip(KvCacheType::BF16, x);
    const std::vector<float> f = round_trip(KvCacheType::F32, x);
    for (int32_t i = 0; i < n; ++i) {
      EXPECT_EQ(h[i], fp16_to_f32(f32_to_fp16(x[i]))) << i;
      EXPECT_EQ(b[i], bf16_to_f32(f32_to_bf16(x[i]))) << i;
      EXPECT_EQ(f[i], x[i]);
    }
  }
}

TEST(KvCacheType, Q8RoundTripWithinHalfAStep) {
  for (int32_t n : {32, 64, 96, 256}) {
    std::vector<float> x = random_values(static_cast<size_t>(n), 77 + n, 2.0f);
    std::fill(x.begin() + 32, x.begin() + std::min(n, 40), 0.0f);
    if (n >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
    const std::vector<float> back = round_trip(KvCacheType::Q8_0, x);
    for (int32_t b = 0; b < n / 32; ++b) {
      float amax = 0.0f;
      for (int32_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[static_cast<size_t>(b * 32 + i)]));
      const float d = fp16_to_f32(f32_to_fp16(amax / 127.0f));
      for (int32_t i = 0; i < 32; ++i) {
        const size_t k = static_cast<size_t>(b * 32 + i);
        EXPECT_NEAR(back[k], x[k], 0.5f * d + 1e-3f * d + 1e-30f) << "block " << b;
        // The stored value is an integer multiple of the block's scale.
        if (d > 0) {
          EXPECT_EQ(back[k], std::nearbyint(back[k] / d) * d);
        }
      }
    }
  }
}

// One sequence of `len` tokens in a pool of `type` through a shuffled block
// table; queries at the last `rows` positions.
struct TypedPool {
  std::vector<uint8_t> k, v;
  std::vector<int32_t> table;
  std::vector<float> k_ref, v_ref;  // what the cache holds, as f32, by position
};

TypedPool typed_pool(KvCacheType type, int32_t len, int32_t kv_row, int32_t block_size, uint32_t seed) {
  std::mt19937 rng(seed);
  const int32_t blocks = (len + block_size - 1) / block_size + 2;
  const size_t row_bytes = kv_row_bytes(type, kv_row);
  TypedPool p;
  p.k.assign(static_cast<size_t>(blocks) * block_size * row_bytes, 0x7f);
  p.v.assign(p.k.size(), 0x7f);
  std::vector<int32_t> ids(static_cast<size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  p.table.assign(ids.begin(), ids.begin() + (len + block_size - 1) / block_size);
  const std::vector<float> k = random_values(static_cast<size_t>(len) * kv_row, seed + 1);
  const std::vector<float> v = random_values(static_cast<size_t>(len) * kv_row, seed + 2);
  p.k_ref.resize(k.size());
  p.v_ref.resize(v.size());
  for (int32_t pos = 0; pos < len; ++pos) {
    const size_t slot = static_cast<size_t>(p.table[static_cast<size_t>(pos / block_size)]) * block_size + pos % block_size;
    const size_t at = static_cast<size_t>(pos) * kv_row;
    store_kv_row(type, k.data() + at, kv_row, p.k.data() + slot * row_bytes);
    store_kv_row(type, v.data() + at, kv_row, p.v.data() + slot * row_bytes);
    load_kv_row(type, p.k.data() + slot * row_bytes, kv_row, p.k_ref.data() + at);
    load_kv_row(type, p.v.data() + slot * row_bytes, kv_row, p.v_ref.data() + at);
  }
  return p;
}

TEST(KvCacheType, AttentionOverEachTypeMatchesReferenceAndKeepsInvariance) {
  const int32_t heads = 6, kv_heads = 2, hd = 64, kv_row = kv_heads * hd, len = 131, rows = 3;
  const float scale = 0.125f;
  const std::vector<float> q = random_values(static_cast<size_t>(rows) * heads * hd, 5, 2.0f);
  std::vector<int32_t> positions;
  for (int32_t r = 0; r < rows; ++r) positions.push_back(len - rows + r);
  ThreadPool pool1(1), pool2(2);
  for (KvCacheType type : kTypes) {
    std::vector<float> first;
    for (int32_t bs : {16, 5, 64}) {
      const TypedPool p = typed_pool(type, len, kv_row, bs, 99);
      std::vector<float> expected(q.size());
      attention_ref(q.data(), positions.data(), rows, p.k_ref.data(), p.v_ref.data(), heads, kv_heads, hd, scale, 0,
                    expected.data());
      const AttentionShape shape{heads, kv_heads, hd, scale, 0};
      const PagedKvLayer kv{p.k.data(), p.v.data(), bs, type};
      const std::vector<int32_t> qs = {0, rows}, bts = {0, static_cast<int32_t>(p.table.size())};
      const PagedAttentionBatch batch{1, qs.data(), positions.data(), bts.data(), p.table.data()};
      std::vector<float> out(q.size());
      paged_attention(shape, kv, batch, q.data(), out.data(), bs == 5 ? pool1 : pool2);
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], 2e-5) << kv_cache_type_name(type);
      if (first.empty()) {
        first = out;
      } else {
        EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * sizeof(float)))
            << kv_cache_type_name(type) << ": block size " << bs << " changed the bits";
      }
      // The same sequence as a cascade group of one with its prefix taken by the shared pass.
      const std::vector<int32_t> prefix = {96}, starts = {0, 1}, members = {0};
      const CascadeGroups groups{1, prefix.data(), starts.data(), members.data()};
      std::vector<float> cascaded(q.size());
      paged_attention(shape, kv, batch, q.data(), cascaded.data(), pool2, groups);
      EXPECT_EQ(0, std::memcmp(out.data(), cascaded.data(), out.size() * sizeof(float)))
          << kv_cache_type_name(type) << ": cascade changed the bits";
    }
  }
}

}  // namespace
}  // namespace kvscope
