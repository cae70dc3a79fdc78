// kernels/cuda/rope_write_kv (one launch) against rope then write_kv (two
// launches, each tested against its own reference): the q/k/v rows after
// the rotation and the cache bytes must be the same, bit for bit, for every
// cache type, both pair styles, with and without frequency factors, with a
// padding token (slot -1) and an out-of-range slot, at large positions.
#include "kernels/cuda/rope_write_kv.cuh"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/cuda/kv_write.cuh"
#include "kernels/cuda/rope.cuh"
#include "cuda_test_util.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

struct Shape {
  int32_t num_heads, num_kv_heads, head_dim;
};

void check(KvCacheType type, const Shape& shape, RopeStyle style, bool factors, std::mt19937& rng) {
  SCOPED_TRACE(testing::Message() << kv_cache_type_name(type) << " heads=" << shape.num_heads << "/"
                                  << shape.num_kv_heads << " dim=" << shape.head_dim
                                  << (style == RopeStyle::kAdjacentPairs ? " adjacent" : " half-split")
                                  << (factors ? " with factors" : ""));
  constexpr int64_t kTokens = 7;
  const int32_t kv_size = shape.num_kv_heads * shape.head_dim;
  const int64_t width = static_cast<int64_t>(shape.num_heads + 2 * shape.num_kv_heads) * shape.head_dim;
  const int64_t stride = width + 3;  // rows wider than their heads, as nothing forbids
  const auto qkv = cuda_test::random_floats(static_cast<size_t>(kTokens * stride), rng, -4.0f, 4.0f);
  const std::vector<int32_t> positions = {0, 1, 17, 300, 4095, 70000, 9};
  const int64_t num_slots = 2 * kTokens;
  std::vector<int64_t> slots(static_cast<size_t>(num_slots));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(kTokens);
  slots[2] = -1;         // padding
  slots[4] = num_slots;  // out of range: nothing written
  std::vector<float> freq(static_cast<size_t>(shape.head_dim / 2));
  for (size_t i = 0; i < freq.size(); ++i) freq[i] = 1.0f + 0.37f * static_cast<float>(i % 5);

  DeviceBuffer<float> two(qkv), one(qkv), dfreq(freq);
  DeviceBuffer<int32_t> dpos(positions);
  DeviceBuffer<int64_t> dslots(slots);
  const size_t cache_bytes = static_cast<size_t>(num_slots) * kv_row_bytes(type, kv_size);
  DeviceBuffer<uint8_t> k_two(cache_bytes), v_two(cache_bytes), k_one(cache_bytes), v_one(cache_bytes);
  for (DeviceBuffer<uint8_t>* b : {&k_two, &v_two, &k_one, &v_one}) CUDA_OK(b->poison());
  const float base = 10000.0f;
  const float* f = factors ? dfreq.get() : nullptr;

  LAUNCH_OK(cuda::rope(two.get(), kTokens, shape.num_heads + shape.num_kv_heads, shape.head_dim, dpos.get(), base,
                       style, stride, f, nullptr));
  const float* k = two.get() + static_cast<int64_t>(shape.num_heads) * shape.head_dim;
  LAUNCH_OK(cuda::write_kv(k, k + kv_size, stride, dslots.get(), kTokens, kv_size, type, k_two.get(), v_two.get(),
                           num_slots, nullptr));
  const cuda::QkvRows rows{one.get(), stride, shape.num_heads, shape.num_kv_heads, shape.head_dim};
  LAUNCH_OK(cuda::rope_and_write_kv(rows, kTokens, dpos.get(), base, style, f, dslots.get(), type, k_one.get(),
                                    v_one.get(), num_slots, nullptr));

  const std::vector<float> a = two.download(), b = one.download();
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "rotated q/k/v rows differ";
  EXPECT_TRUE(k_two.download() == k_one.download()) << "K cache bytes differ";
  EXPECT_TRUE(v_two.download() == v_one.download()) << "V cache bytes differ";
  // And the rotation happened: a row at a non-zero position changed.
  EXPECT_NE(0, std::memcmp(&b[3 * stride], &qkv[3 * stride], static_cast<size_t>(width) * sizeof(float)));
}

TEST(CudaRopeWriteKv, EqualsRopeThenWriteKv) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(91);
  const Shape shapes[] = {{9, 3, 64}, {4, 4, 32}, {8, 1, 128}, {6, 2, 96}, {3, 1, 6}};
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0}) {
    for (const Shape& shape : shapes) {
      if (type == KvCacheType::Q8_0 && shape.num_kv_heads * shape.head_dim % kQ8BlockElems != 0) continue;
      for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalfSplit}) {
        for (bool factors : {false, true}) check(type, shape, style, factors, rng);
      }
    }
  }
}

}  // namespace
}  // namespace kvscope
