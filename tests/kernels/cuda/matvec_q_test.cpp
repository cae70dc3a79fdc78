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
      for (int64_t num_tokens : {int64_t{1}, int64_t{7}}) {
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

}  // namespace
}  // namespace kvscope
