// kernels/cuda/embedding against kernels/reference/dequantize (dequantize_row_ref)
// for F32, F16, Q8_0 (SmolLM2's token_embd) and Q4_1 tables. Exact equality:
// the device dequantises with the same IEEE operations and no fused multiply-add.
#include "kernels/cuda/embedding.cuh"

#include <cmath>

#include "kernels/reference/dequantize.h"
#include "cuda_test_util.h"
#include "quant_blocks.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

std::vector<uint8_t> random_table(TensorType type, int64_t vocab, int64_t dim, std::mt19937& rng) {
  if (type == TensorType::Q8_0 || type == TensorType::Q4_1) return cuda_test::random_quant_rows(type, vocab, dim, rng);
  const auto values = cuda_test::random_floats(static_cast<size_t>(vocab * dim), rng);
  std::vector<uint8_t> bytes(row_bytes(type, dim) * static_cast<size_t>(vocab));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == TensorType::F32) {
      std::memcpy(&bytes[4 * i], &values[i], 4);
    } else {
      const uint16_t h = f32_to_fp16(values[i]);
      std::memcpy(&bytes[2 * i], &h, 2);
    }
  }
  return bytes;
}

TEST(CudaEmbedding, MatchesReferenceDequantisation) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(51);
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::Q8_0, TensorType::Q4_1}) {
    const bool quantised = type == TensorType::Q8_0 || type == TensorType::Q4_1;
    std::vector<int64_t> dims = {32, 576};  // 576: SmolLM2
    if (!quantised) dims.insert(dims.end(), std::begin(cuda_test::kOddSizes), std::end(cuda_test::kOddSizes));
    for (int64_t dim : dims) {
      for (int64_t num_tokens : cuda_test::kOddSizes) {
        SCOPED_TRACE(testing::Message() << traits_of(type).name << " dim=" << dim << " tokens=" << num_tokens);
        const int64_t vocab = 1000;
        const std::vector<uint8_t> table = random_table(type, vocab, dim, rng);
        std::vector<int32_t> ids(static_cast<size_t>(num_tokens));
        std::uniform_int_distribution<int32_t> id_dist(0, static_cast<int32_t>(vocab - 1));
        for (int32_t& id : ids) id = id_dist(rng);
        ids[0] = static_cast<int32_t>(vocab - 1);  // the last row, which a wrong row size would overrun
        std::vector<float> ref(static_cast<size_t>(num_tokens * dim));
        const size_t rb = row_bytes(type, dim);
        for (int64_t t = 0; t < num_tokens; ++t) {
          dequantize_row_ref(type, &table[static_cast<size_t>(ids[t]) * rb], &ref[static_cast<size_t>(t * dim)], dim);
        }
        DeviceBuffer<uint8_t> dtable(table);
        DeviceBuffer<int32_t> dids(ids);
        DeviceBuffer<float> dout(ref.size());
        CUDA_OK(dout.poison());
        LAUNCH_OK(cuda::embedding_lookup(type, dtable.get(), vocab, dim, dids.get(), num_tokens, dout.get(), nullptr));
        EXPECT_TRUE(dout.download() == ref);
      }
    }
  }
}

TEST(CudaEmbedding, OutOfRangeIdGivesNaNRow) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(52);
  const int64_t vocab = 10, dim = 64;
  const std::vector<uint8_t> table = random_table(TensorType::Q8_0, vocab, dim, rng);
  const std::vector<int32_t> ids = {3, 10, -1};
  DeviceBuffer<uint8_t> dtable(table);
  DeviceBuffer<int32_t> dids(ids);
  DeviceBuffer<float> dout(static_cast<size_t>(3 * dim));
  CUDA_OK(cudaMemset(dout.get(), 0, dout.size() * sizeof(float)));
  LAUNCH_OK(cuda::embedding_lookup(TensorType::Q8_0, dtable.get(), vocab, dim, dids.get(), 3, dout.get(), nullptr));
  const std::vector<float> out = dout.download();
  for (int64_t i = 0; i < dim; ++i) EXPECT_FALSE(std::isnan(out[static_cast<size_t>(i)]));
  for (int64_t i = dim; i < 3 * dim; ++i) EXPECT_TRUE(std::isnan(out[static_cast<size_t>(i)]));
}

}  // namespace
}  // namespace kvscope
