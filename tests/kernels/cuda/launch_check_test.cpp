// The launchers' precondition checks: each refuses bad arguments with
// cudaErrorInvalidValue before touching the device, and an empty batch is a
// successful no-op. These run without a GPU (no CUDA call is reached), so CI
// and machines without a device run them for real.
#include <gtest/gtest.h>

#include "kernels/cuda/act_and_mul.cuh"
#include "kernels/cuda/argmax.cuh"
#include "kernels/cuda/dequantize_bf16.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/kv_write.cuh"
#include "kernels/cuda/matvec_q.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/paged_prefill.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/rope_write_kv.cuh"
#include "kernels/cuda/sample_tokens.cuh"

namespace kvscope {
namespace {

// A non-null pointer the launchers never dereference on the host (a refused
// call returns before launching anything).
float* fake() {
  static float f[1];
  return f;
}

TEST(CudaLaunchCheck, RefusesBadSizes) {
  EXPECT_EQ(cuda::rms_norm(fake(), fake(), 1, 0, 1e-5f, fake(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::rms_norm(fake(), fake(), -1, 8, 1e-5f, fake(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::rope(fake(), 1, 1, 7, nullptr, 1e4f, RopeStyle::kHalfSplit, 0, nullptr, nullptr),
            cudaErrorInvalidValue);  // odd head_dim
  EXPECT_EQ(cuda::rope(fake(), 1, 2, 8, nullptr, 1e4f, RopeStyle::kHalfSplit, 15, nullptr, nullptr),
            cudaErrorInvalidValue);  // stride shorter than the heads
  EXPECT_EQ(cuda::silu_mul(fake(), fake(), -1, fake(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::write_kv(fake(), fake(), 0, nullptr, 1, 48, KvCacheType::Q8_0, fake(), fake(), 4, nullptr),
            cudaErrorInvalidValue);  // q8_0 row of 48 elements
  EXPECT_EQ(cuda::embedding_lookup(TensorType::Q4_1, fake(), 10, 48, nullptr, 1, fake(), nullptr),
            cudaErrorInvalidValue);  // not whole blocks
  EXPECT_EQ(cuda::embedding_lookup(TensorType::Q4_K, fake(), 10, 256, nullptr, 1, fake(), nullptr),
            cudaErrorInvalidValue);  // type not supported
  EXPECT_EQ(cuda::matvec_q(TensorType::F16, fake(), 4, 32, fake(), 1, fake(), nullptr), cudaErrorInvalidValue);
  alignas(16) static float activations[8];
  EXPECT_EQ(cuda::matvec_q(TensorType::Q4_1, fake(), 4, 32, activations + 1, 1, fake(), nullptr),
            cudaErrorInvalidValue);  // activations read as float4: 16-byte alignment
  const cuda::InputNorm misaligned_norm{activations + 1, 1e-5f};
  EXPECT_EQ(cuda::matvec_q(TensorType::Q4_1, fake(), 4, 32, activations, 1, fake(), nullptr, cuda::MatvecMath::kF32,
                           cuda::TensorCoreSplit::kAuto, misaligned_norm),
            cudaErrorInvalidValue);  // the norm's weights are read as float4 beside the activations
  EXPECT_EQ(cuda::matvec_q_glu(TensorType::Q4_1, fake(), fake(), 4, 32, activations, 1, cuda::GluActivation::Silu,
                               fake(), 4, nullptr, cuda::MatvecMath::kTensorCores, cuda::TensorCoreSplit::kAuto,
                               cuda::InputNorm{activations, -1.0f}),
            cudaErrorInvalidValue);  // a negative epsilon
  const cuda::MatvecOutput narrow{fake(), 4, fake(), 3};
  EXPECT_EQ(cuda::matvec_q_multi(TensorType::Q4_1, &narrow, 1, 32, activations, 1, nullptr),
            cudaErrorInvalidValue);  // ld below the row count
  const cuda::MatvecOutput four[4] = {{fake(), 4, fake(), 4}, {fake(), 4, fake(), 4}, {fake(), 4, fake(), 4},
                                      {fake(), 4, fake(), 4}};
  EXPECT_EQ(cuda::matvec_q_multi(TensorType::Q4_1, four, 4, 32, activations, 1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::matvec_q_multi(TensorType::Q4_1, four, 0, 32, activations, 1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::matvec_q_glu(TensorType::Q4_1, fake(), fake(), 4, 32, activations, 1, cuda::GluActivation::Silu,
                               fake(), 3, nullptr),
            cudaErrorInvalidValue);  // ld below the row count
  EXPECT_EQ(cuda::argmax_rows(fake(), 1, 0, nullptr, nullptr), cudaErrorInvalidValue);
  uint16_t bits[1];
  EXPECT_EQ(cuda::dequantize_rows_bf16(TensorType::F16, fake(), 32, 0, 1, bits, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::dequantize_rows_bf16(TensorType::Q8_0, fake(), 48, 0, 1, bits, nullptr),
            cudaErrorInvalidValue);  // not whole blocks
  EXPECT_EQ(cuda::dequantize_rows_bf16(TensorType::Q4_1, fake(), 32, -1, 1, bits, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::f32_to_bf16(fake(), -1, bits, nullptr), cudaErrorInvalidValue);
}

// The fused rotary + K/V write: rope's and write_kv's preconditions, and its
// own, a head of at most 512 (its sine / cosine table holds 256 pairs).
TEST(CudaLaunchCheck, RopeAndWriteKvPreconditions) {
  int32_t positions[1] = {0};
  int64_t slots[1] = {0};
  const auto launch = [&](int32_t head_dim, int64_t row_stride, KvCacheType type) {
    const cuda::QkvRows rows{fake(), row_stride, 1, 1, head_dim};
    return cuda::rope_and_write_kv(rows, 1, positions, 1e4f, RopeStyle::kHalfSplit, nullptr, slots, type, fake(),
                                   fake(), 1, nullptr);
  };
  EXPECT_EQ(launch(514, 3 * 514, KvCacheType::F32), cudaErrorInvalidValue);  // 257 pairs: beyond the table
  EXPECT_EQ(launch(7, 3 * 7, KvCacheType::F32), cudaErrorInvalidValue);      // odd head_dim
  EXPECT_EQ(launch(8, 3 * 8 - 1, KvCacheType::F32), cudaErrorInvalidValue);  // stride shorter than the heads
  EXPECT_EQ(launch(48, 3 * 48, KvCacheType::Q8_0), cudaErrorInvalidValue);   // q8_0 row of 48 elements
  const cuda::QkvRows rows{fake(), 3 * 8, 1, 1, 8};
  EXPECT_EQ(cuda::rope_and_write_kv(rows, 0, nullptr, 1e4f, RopeStyle::kHalfSplit, nullptr, nullptr,
                                    KvCacheType::F32, nullptr, nullptr, 0, nullptr),
            cudaSuccess);  // no tokens: nothing to do, nothing dereferenced
  EXPECT_EQ(cuda::rope_and_write_kv(rows, 1, nullptr, 1e4f, RopeStyle::kHalfSplit, nullptr, slots,
                                    KvCacheType::F32, fake(), fake(), 1, nullptr),
            cudaErrorInvalidValue);  // no positions
}

TEST(CudaLaunchCheck, RefusesNullPointers) {
  EXPECT_EQ(cuda::rms_norm(nullptr, fake(), 2, 8, 1e-5f, fake(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::add_rms_norm(fake(), nullptr, fake(), 2, 8, 1e-5f, fake(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::gelu_tanh_mul(fake(), nullptr, 4, fake(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::write_kv(fake(), fake(), 0, nullptr, 1, 32, KvCacheType::F16, fake(), fake(), 4, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::argmax_rows(nullptr, 1, 10, nullptr, nullptr), cudaErrorInvalidValue);
}

TEST(CudaLaunchCheck, PagedDecodeAttentionPreconditions) {
  const PagedKvLayer kv{fake(), fake(), 16, KvCacheType::F32};
  const int32_t ids[1] = {0};
  const cuda::PagedDecodeBatch batch{1, ids, ids, ids, 64};
  const size_t ws = cuda::paged_decode_workspace_floats(1, 4, 64, 64, 32);
  EXPECT_EQ(ws, size_t{4 * 2 * (2 + 64)});  // 4 heads x 2 partitions x (max, sum, 64 outputs)
  const AttentionShape good{4, 2, 64, 0.125f, 0, 0.0f};
  AttentionShape bad = good;
  bad.num_kv_heads = 3;  // 4 heads do not split into 3 groups
  EXPECT_EQ(cuda::paged_decode_attention(bad, kv, batch, fake(), fake(), 32, fake(), ws, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::paged_decode_attention(good, kv, batch, fake(), fake(), 48, fake(), ws, nullptr),
            cudaErrorInvalidValue);  // partition not a multiple of kAttentionTile
  EXPECT_EQ(cuda::paged_decode_attention(good, kv, batch, fake(), fake(), 32, fake(), ws - 1, nullptr),
            cudaErrorInvalidValue);  // workspace too small
  const PagedKvLayer q8{fake(), fake(), 16, KvCacheType::Q8_0};
  AttentionShape dim48 = good;
  dim48.head_dim = 48;
  EXPECT_EQ(cuda::paged_decode_attention(dim48, q8, batch, fake(), fake(), 32, fake(), ws, nullptr),
            cudaErrorInvalidValue);  // q8_0 needs whole blocks per head
}

TEST(CudaLaunchCheck, PagedPrefillAttentionPreconditions) {
  const PagedKvLayer kv{fake(), fake(), 16, KvCacheType::F32};
  const int32_t query_start[2] = {0, 2};
  const int32_t positions[2] = {64, 65};
  const int32_t ids[1] = {0};
  const PagedAttentionBatch host{1, query_start, positions, nullptr, nullptr};
  const cuda::PagedPrefillBatch batch{1, ids, ids, ids, ids};
  const AttentionShape good{4, 2, 64, 0.125f, 0, 0.0f};
  cuda::PrefillPlan plan;
  ASSERT_EQ(cuda::plan_paged_prefill(good, host, {}, &plan), cudaSuccess);
  const int32_t* dev = ids;  // never read: every call below is refused
  AttentionShape wide = good;
  wide.head_dim = 512;  // beyond kMaxPrefillHeadDim
  EXPECT_EQ(cuda::paged_prefill_attention(wide, kv, batch, plan, dev, fake(), fake(), nullptr, 0, nullptr),
            cudaErrorInvalidValue);
  AttentionShape wider_group = good;
  wider_group.num_kv_heads = 1;  // 4 heads per KV head: the plan's 8 rows per block would be 32 warps
  EXPECT_EQ(cuda::paged_prefill_attention(wider_group, kv, batch, plan, dev, fake(), fake(), nullptr, 0, nullptr),
            cudaErrorInvalidValue);
  const PagedKvLayer q8{fake(), fake(), 16, KvCacheType::Q8_0};
  AttentionShape dim48 = good;
  dim48.head_dim = 48;
  EXPECT_EQ(cuda::paged_prefill_attention(dim48, q8, batch, plan, dev, fake(), fake(), nullptr, 0, nullptr),
            cudaErrorInvalidValue);  // q8_0 needs whole blocks per head
  const int32_t prefix = 64, seq_start[2] = {0, 1}, seqs[1] = {0};
  cuda::PrefillPlan cascade;
  ASSERT_EQ(cuda::plan_paged_prefill(good, host, CascadeGroups{1, &prefix, seq_start, seqs}, &cascade), cudaSuccess);
  const size_t ws = cuda::paged_prefill_workspace_floats(cascade, good);
  EXPECT_EQ(ws, size_t{2 * 2 * 4 * (2 + 64)});  // 2 states (merged, current) x 2 rows x 4 heads x (max, sum, 64)
  EXPECT_EQ(cuda::paged_prefill_attention(good, kv, batch, cascade, dev, fake(), fake(), fake(), ws - 1, nullptr),
            cudaErrorInvalidValue);  // workspace too small
}

TEST(CudaLaunchCheck, SampleTokensPreconditions) {
  const double u = 0.0;
  int32_t id = 0;
  const cuda::DeviceSamplingParams prm;
  EXPECT_EQ(cuda::sample_tokens(fake(), -1, 10, &prm, &u, fake(), 10, &id, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::sample_tokens(fake(), 1, 0, &prm, &u, fake(), 10, &id, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::sample_tokens(fake(), 2, 10, &prm, &u, fake(), 19, &id, nullptr),
            cudaErrorInvalidValue);  // workspace too small
  EXPECT_EQ(cuda::sample_tokens(nullptr, 1, 10, &prm, &u, fake(), 10, &id, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::sample_tokens_workspace_floats(3, 7), size_t{21});
}

// Zero rows: nothing to launch, success even without a device.
TEST(CudaLaunchCheck, EmptyBatchIsANoOp) {
  EXPECT_EQ(cuda::rms_norm(nullptr, nullptr, 0, 8, 1e-5f, nullptr, nullptr), cudaSuccess);
  EXPECT_EQ(cuda::silu_mul(nullptr, nullptr, 0, nullptr, nullptr), cudaSuccess);
  EXPECT_EQ(cuda::argmax_rows(nullptr, 0, 10, nullptr, nullptr), cudaSuccess);
  EXPECT_EQ(cuda::sample_tokens(nullptr, 0, 10, nullptr, nullptr, nullptr, 0, nullptr, nullptr), cudaSuccess);
  EXPECT_EQ(cuda::dequantize_rows_bf16(TensorType::Q4_1, nullptr, 32, 0, 0, nullptr, nullptr), cudaSuccess);
  EXPECT_EQ(cuda::f32_to_bf16(nullptr, 0, nullptr, nullptr), cudaSuccess);
  cuda::PrefillPlan empty;
  ASSERT_EQ(cuda::plan_paged_prefill(AttentionShape{4, 2, 64, 0.125f, 0, 0.0f}, PagedAttentionBatch{}, {}, &empty),
            cudaSuccess);
  EXPECT_EQ(cuda::paged_prefill_attention(AttentionShape{4, 2, 64, 0.125f, 0, 0.0f}, PagedKvLayer{nullptr, nullptr, 16,
                                          KvCacheType::F32}, cuda::PagedPrefillBatch{}, empty, nullptr, nullptr,
                                          nullptr, nullptr, 0, nullptr),
            cudaSuccess);
  const PagedKvLayer kv{nullptr, nullptr, 16, KvCacheType::F32};
  const cuda::PagedDecodeBatch none{0, nullptr, nullptr, nullptr, 1};
  EXPECT_EQ(cuda::paged_decode_attention(AttentionShape{4, 2, 64, 0.125f, 0, 0.0f}, kv, none, nullptr, nullptr, 32,
                                         nullptr, 0, nullptr),
            cudaSuccess);
}

}  // namespace
}  // namespace kvscope
