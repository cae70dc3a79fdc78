// kernels/cuda/matvec_q against kernels/reference/matmul (f64 dot products of
// the dequantised rows) for Q4_1 and Q8_0 weights in the GGUF block layout.
// Tolerance 1e-4 normalised: f32 sums over rows up to 1536 long, with the
// block scale factored out (d * sum q x + m * sum x), against f64.
#include "kernels/cuda/matvec_q.cuh"

#include "kernels/reference/matmul.h"
#include "cuda_test_util.h"
#include "quant_blocks.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

constexpr double kTolerance = 1e-4;

TEST(CudaMatvecQ, MatchesReference) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(61);
  struct Case {
    int64_t num_rows, row_len;
  };
  std::vector<Case> cases;
  for (int64_t rows : cuda_test::kOddSizes) cases.push_back({rows, 32});
  for (int64_t rows : cuda_test::kOddSizes) cases.push_back({rows, 32 * 37});  // 37 blocks: lanes wrap unevenly
  cases.push_back({576, 1536});   // SmolLM2 ffn_down (rows = outputs)
  cases.push_back({1536, 576});   // ffn_gate / ffn_up
  cases.push_back({4099, 576});   // a vocabulary slice, rows not a multiple of 4
  for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
    for (const Case& c : cases) {
      for (int64_t num_tokens : {int64_t{1}, int64_t{7}, int64_t{17}}) {  // 17: two full tiles of 8 and one token
        SCOPED_TRACE(testing::Message() << traits_of(type).name << " rows=" << c.num_rows << " len=" << c.row_len
                                        << " tokens=" << num_tokens);
        const std::vector<uint8_t> w = cuda_test::random_quant_rows(type, c.num_rows, c.row_len, rng);
        const auto x = cuda_test::random_floats(static_cast<size_t>(num_tokens * c.row_len), rng);
        std::vector<float> ref(static_cast<size_t>(num_tokens * c.num_rows));
        matmul_ref(type, w.data(), c.num_rows, c.row_len, x.data(), num_tokens, ref.data());
        DeviceBuffer<uint8_t> dw(w);
        DeviceBuffer<float> dx(x), dy(ref.size());
        CUDA_OK(dy.poison());
        LAUNCH_OK(cuda::matvec_q(type, dw.get(), c.num_rows, c.row_len, dx.get(), num_tokens, dy.get(), nullptr));
        EXPECT_LT(cuda_test::normalised_error(dy.download(), ref), kTolerance);
      }
    }
  }
}

// A token's bits do not depend on the launch: alone, as each slot of a tile
// of 8, and in launches of 3, 8, 9 and 64 tokens (whole tiles and a tail),
// its result is the same. The engine's invariance (batch composition, chunked
// prefill) rests on this.
TEST(CudaMatvecQ, TokenBitsDoNotDependOnTheLaunch) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(62);
  constexpr int64_t kRows = 97, kLen = 32 * 37, kTokens = 64;
  for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
    SCOPED_TRACE(traits_of(type).name);
    DeviceBuffer<uint8_t> dw(cuda_test::random_quant_rows(type, kRows, kLen, rng));
    const auto x = cuda_test::random_floats(static_cast<size_t>(kTokens * kLen), rng);
    DeviceBuffer<float> dx(x);
    auto run = [&](int64_t first, int64_t count) {
      DeviceBuffer<float> dy(static_cast<size_t>(count * kRows));
      EXPECT_EQ(dy.poison(), cudaSuccess);
      EXPECT_EQ(cuda::matvec_q(type, dw.get(), kRows, kLen, dx.get() + first * kLen, count, dy.get(), nullptr),
                cudaSuccess);
      return dy.download();
    };
    std::vector<std::vector<float>> alone(kTokens);
    for (int64_t t = 0; t < kTokens; ++t) alone[static_cast<size_t>(t)] = run(t, 1);
    for (int64_t count : {int64_t{3}, int64_t{8}, int64_t{9}, kTokens}) {
      for (int64_t first : {int64_t{0}, int64_t{5}, kTokens - count}) {
        if (first + count > kTokens) continue;
        const std::vector<float> y = run(first, count);
        for (int64_t t = 0; t < count; ++t) {
          const std::vector<float>& want = alone[static_cast<size_t>(first + t)];
          EXPECT_EQ(0, std::memcmp(&y[static_cast<size_t>(t * kRows)], want.data(), kRows * sizeof(float)))
              << "token " << first + t << " as token " << t << " of a launch of " << count;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvscope
