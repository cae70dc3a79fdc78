// kernels/cuda/kv_write against store_kv_row (kernels/cpu/kv_cache_type.h):
// the device cache must hold exactly the CPU storage's bytes, for every cache
// type, including slots nobody wrote (still poisoned on both sides), padding
// tokens (slot -1) and out-of-range slots (skipped). Exact equality, no
// tolerance: the conversions are the same IEEE operations on both sides.
#include "kernels/cuda/kv_write.cuh"

#include <algorithm>
#include <numeric>

#include "cuda_test_util.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

void check(KvCacheType type, int32_t kv_size, int64_t num_tokens, int64_t extra_stride, std::mt19937& rng) {
  SCOPED_TRACE(testing::Message() << kv_cache_type_name(type) << " kv_size=" << kv_size << " tokens=" << num_tokens
                                  << " extra_stride=" << extra_stride);
  const int64_t stride = kv_size + extra_stride;
  const auto k = cuda_test::random_floats(static_cast<size_t>(num_tokens * stride), rng, -4.0f, 4.0f);
  const auto v = cuda_test::random_floats(k.size(), rng, -4.0f, 4.0f);
  const int64_t num_slots = 2 * num_tokens + 3;
  std::vector<int64_t> all_slots(static_cast<size_t>(num_slots));
  std::iota(all_slots.begin(), all_slots.end(), 0);
  std::shuffle(all_slots.begin(), all_slots.end(), rng);
  std::vector<int64_t> slots(all_slots.begin(), all_slots.begin() + num_tokens);  // distinct
  if (num_tokens > 2) {
    slots[1] = -1;         // padding
    slots[2] = num_slots;  // out of range: skipped, nothing written
  }

  const size_t slot_bytes = kv_row_bytes(type, kv_size);
  std::vector<uint8_t> k_ref(static_cast<size_t>(num_slots) * slot_bytes, 0xff), v_ref = k_ref;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t s = slots[static_cast<size_t>(t)];
    if (s < 0 || s >= num_slots) continue;
    store_kv_row(type, &k[t * stride], kv_size, &k_ref[static_cast<size_t>(s) * slot_bytes]);
    store_kv_row(type, &v[t * stride], kv_size, &v_ref[static_cast<size_t>(s) * slot_bytes]);
  }

  DeviceBuffer<float> dk(k), dv(v);
  DeviceBuffer<int64_t> dslots(slots);
  DeviceBuffer<uint8_t> dk_cache(k_ref.size()), dv_cache(v_ref.size());
  CUDA_OK(dk_cache.poison());
  CUDA_OK(dv_cache.poison());
  LAUNCH_OK(cuda::write_kv(dk.get(), dv.get(), extra_stride == 0 ? 0 : stride, dslots.get(), num_tokens, kv_size, type,
                           dk_cache.get(), dv_cache.get(), num_slots, nullptr));
  EXPECT_TRUE(dk_cache.download() == k_ref) << "K cache bytes differ from store_kv_row's";
  EXPECT_TRUE(dv_cache.download() == v_ref) << "V cache bytes differ from store_kv_row's";
}

TEST(CudaKvWrite, MatchesCpuStorageBytes) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(31);
  for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16, KvCacheType::BF16, KvCacheType::Q8_0}) {
    std::vector<int32_t> kv_sizes = {32, 96, 192, 1024};  // 192: SmolLM2's 3 KV heads x 64
    if (type != KvCacheType::Q8_0) kv_sizes.insert(kv_sizes.end(), {1, 7, 17, 54, 97});
    for (int32_t kv_size : kv_sizes) {
      for (int64_t num_tokens : cuda_test::kOddSizes) check(type, kv_size, num_tokens, 0, rng);
      check(type, kv_size, 17, 2 * kv_size + 5, rng);  // K and V read out of a wider (fused QKV) row
    }
  }
}

// q8_0 edge cases: an all-zero row (scale 0), and a row whose quantised
// values all fall on halves: block 0 holds 0.25 (2j + 1) for j < 31 and 63.5,
// so d = 63.5 / 127 = 0.5 exactly and x / d = j + 0.5, which must round away
// from zero as std::lround does (block 1: the same negated).
TEST(CudaKvWrite, Q8EdgeValues) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  const int32_t kv_size = 64;
  std::vector<float> k(2 * kv_size, 0.0f);  // token 0: zeros
  for (int32_t j = 0; j < 32; ++j) {
    const float x = j < 31 ? 0.25f * static_cast<float>(2 * j + 1) : 63.5f;
    k[kv_size + j] = x;
    k[kv_size + 32 + j] = -x;
  }
  const std::vector<float> v = k;
  const std::vector<int64_t> slots = {1, 0};
  const size_t slot_bytes = kv_row_bytes(KvCacheType::Q8_0, kv_size);
  std::vector<uint8_t> ref(2 * slot_bytes);
  store_kv_row(KvCacheType::Q8_0, &k[0], kv_size, &ref[slot_bytes]);
  store_kv_row(KvCacheType::Q8_0, &k[kv_size], kv_size, &ref[0]);
  ASSERT_EQ(static_cast<int8_t>(ref[2]), 1);  // 0.25 / 0.5 = 0.5 rounds away from zero
  ASSERT_EQ(static_cast<int8_t>(ref[2 + kQ8BlockBytes]), -1);
  DeviceBuffer<float> dk(k), dv(v);
  DeviceBuffer<int64_t> dslots(slots);
  DeviceBuffer<uint8_t> dk_cache(ref.size()), dv_cache(ref.size());
  CUDA_OK(dk_cache.poison());
  CUDA_OK(dv_cache.poison());
  LAUNCH_OK(cuda::write_kv(dk.get(), dv.get(), 0, dslots.get(), 2, kv_size, KvCacheType::Q8_0, dk_cache.get(),
                           dv_cache.get(), 2, nullptr));
  EXPECT_TRUE(dk_cache.download() == ref);
  EXPECT_TRUE(dv_cache.download() == ref);
}

}  // namespace
}  // namespace kvscope
