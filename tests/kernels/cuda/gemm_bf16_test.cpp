// kernels/cuda/gemm_bf16 (cuBLAS, binary cuda_gemm_test). Two comparisons:
//   - against f64 dot products of the same bf16 values: checks the layout and
//     the tiling exactly up to f32 accumulation (1e-5 normalised);
//   - matmul_q_prefill against kernels/reference/matmul (f64 over the exact
//     dequantised weights and f32 activations): the bf16-appropriate
//     tolerance 1e-2 (each operand loses ~0.2% to bf16 rounding; the
//     observed error should be a few 1e-3).
// Outputs are poisoned; y columns past num_rows (ldy > num_rows) must stay so.
#include "kernels/cuda/gemm_bf16.cuh"

#include "kernels/reference/dequantize.h"
#include "kernels/reference/half.h"
#include "kernels/reference/matmul.h"
#include "cuda_test_util.h"
#include "quant_blocks.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

class Handle {
 public:
  Handle() { ok_ = cublasCreate(&h_) == CUBLAS_STATUS_SUCCESS; }
  ~Handle() {
    if (ok_) cublasDestroy(h_);
  }
  cublasHandle_t get() const { return h_; }
  bool ok() const { return ok_; }

 private:
  cublasHandle_t h_ = nullptr;
  bool ok_ = false;
};

std::vector<uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f32_to_bf16(x[i]);
  return out;
}

// y[t][r] = sum_k w[r][k] x[t][k] in f64 over bf16 values.
std::vector<float> gemm_ref(const std::vector<uint16_t>& w, const std::vector<uint16_t>& x, int64_t rows,
                            int64_t len, int64_t tokens) {
  std::vector<float> y(static_cast<size_t>(rows * tokens));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0.0;
      for (int64_t k = 0; k < len; ++k) {
        acc += double(bf16_to_f32(w[static_cast<size_t>(r * len + k)])) * bf16_to_f32(x[static_cast<size_t>(t * len + k)]);
      }
      y[static_cast<size_t>(t * rows + r)] = static_cast<float>(acc);
    }
  }
  return y;
}

TEST(CudaGemmBf16, MatchesF64OfTheSameValues) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  Handle handle;
  ASSERT_TRUE(handle.ok());
  std::mt19937 rng(92);
  for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{17}, int64_t{54}, int64_t{97}, int64_t{576}}) {
    for (int64_t len : {int64_t{32}, int64_t{96}, int64_t{576}, int64_t{1536}}) {
      for (int64_t tokens : {int64_t{1}, int64_t{7}, int64_t{17}, int64_t{300}}) {
        SCOPED_TRACE(testing::Message() << "rows=" << rows << " len=" << len << " tokens=" << tokens);
        const auto w = to_bf16(cuda_test::random_floats(static_cast<size_t>(rows * len), rng));
        const auto x = to_bf16(cuda_test::random_floats(static_cast<size_t>(tokens * len), rng));
        const std::vector<float> ref = gemm_ref(w, x, rows, len, tokens);
        const int64_t ldy = rows + 3;  // columns [rows, ldy) must stay untouched
        DeviceBuffer<uint16_t> dw(w), dx(x);
        DeviceBuffer<float> dy(static_cast<size_t>(tokens * ldy));
        CUDA_OK(dy.poison());
        CUDA_OK(cuda::gemm_bf16(handle.get(), dw.get(), rows, len, dx.get(), tokens, dy.get(), ldy, nullptr));
        CUDA_OK(cudaDeviceSynchronize());
        const std::vector<float> y = dy.download();
        std::vector<float> packed;
        for (int64_t t = 0; t < tokens; ++t) {
          packed.insert(packed.end(), y.begin() + t * ldy, y.begin() + t * ldy + rows);
          for (int64_t c = rows; c < ldy; ++c) ASSERT_TRUE(std::isnan(y[static_cast<size_t>(t * ldy + c)]));
        }
        EXPECT_LT(cuda_test::normalised_error(packed, ref), 1e-5);
      }
    }
  }
}

TEST(CudaGemmBf16, QuantisedPrefillMatmulMatchesReference) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  Handle handle;
  ASSERT_TRUE(handle.ok());
  std::mt19937 rng(93);
  struct Case {
    int64_t rows, len, tokens, tile_rows;
  };
  const Case cases[] = {
      {1, 32, 1, 64},     {7, 64, 7, 64},       {17, 96, 17, 5},      {54, 576, 54, 16},
      {97, 576, 97, 64},  {576, 1536, 300, 512}, {1536, 576, 300, 512}, {4099, 576, 33, 1024},
  };
  for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(testing::Message() << traits_of(type).name << " rows=" << c.rows << " len=" << c.len
                                      << " tokens=" << c.tokens << " tile=" << c.tile_rows);
      const std::vector<uint8_t> w = cuda_test::random_quant_rows(type, c.rows, c.len, rng);
      const std::vector<float> x = cuda_test::random_floats(static_cast<size_t>(c.tokens * c.len), rng);
      std::vector<float> exact(static_cast<size_t>(c.tokens * c.rows));
      matmul_ref(type, w.data(), c.rows, c.len, x.data(), c.tokens, exact.data());
      std::vector<float> w_f32(static_cast<size_t>(c.rows * c.len));
      for (int64_t r = 0; r < c.rows; ++r) {
        dequantize_row_ref(type, &w[static_cast<size_t>(r) * (w.size() / c.rows)], &w_f32[static_cast<size_t>(r * c.len)],
                           c.len);
      }
      const std::vector<float> rounded = gemm_ref(to_bf16(w_f32), to_bf16(x), c.rows, c.len, c.tokens);
      const size_t ws_bytes = cuda::matmul_q_prefill_workspace_bytes(c.tokens, c.len, c.tile_rows);
      DeviceBuffer<uint8_t> dw(w), dws(ws_bytes);
      DeviceBuffer<float> dx(x), dy(exact.size());
      CUDA_OK(dy.poison());
      CUDA_OK(dws.poison());
      CUDA_OK(cuda::matmul_q_prefill(handle.get(), type, dw.get(), c.rows, c.len, dx.get(), c.tokens, dy.get(),
                                     c.tile_rows, dws.get(), ws_bytes, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      const std::vector<float> y = dy.download();
      EXPECT_LT(cuda_test::normalised_error(y, rounded), 1e-5);
      const double error = cuda_test::normalised_error(y, exact);
      EXPECT_LT(error, 1e-2);
      RecordProperty("bf16_error", std::to_string(error));
    }
  }
}

// The refusals come before any CUDA or cuBLAS call: they run without a device.
TEST(CudaGemmLaunchCheck, RefusesBadArguments) {
  static uint16_t bits[64];
  static float f[64];
  // A handle is never dereferenced by a refused call; any non-null value stands in.
  const auto handle = reinterpret_cast<cublasHandle_t>(bits);
  EXPECT_EQ(cuda::gemm_bf16(nullptr, bits, 1, 32, bits, 1, f, 1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::gemm_bf16(handle, bits, 4, 32, bits, 1, f, 3, nullptr), cudaErrorInvalidValue);  // ldy < rows
  EXPECT_EQ(cuda::gemm_bf16(handle, bits, 0, 32, bits, 1, f, 1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::matmul_q_prefill(handle, TensorType::F16, bits, 1, 32, f, 1, f, 8, bits, 1 << 20, nullptr),
            cudaErrorInvalidValue);  // type
  EXPECT_EQ(cuda::matmul_q_prefill(handle, TensorType::Q4_1, bits, 1, 48, f, 1, f, 8, bits, 1 << 20, nullptr),
            cudaErrorInvalidValue);  // not whole blocks
  const size_t ws = cuda::matmul_q_prefill_workspace_bytes(3, 64, 8);
  EXPECT_EQ(ws, size_t{(3 + 8) * 64 * 2});
  EXPECT_EQ(cuda::matmul_q_prefill(handle, TensorType::Q8_0, bits, 16, 64, f, 3, f, 8, bits, ws - 1, nullptr),
            cudaErrorInvalidValue);  // workspace too small
  EXPECT_EQ(cuda::matmul_q_prefill(handle, TensorType::Q8_0, bits, 16, 64, f, 0, f, 8, nullptr, 0, nullptr),
            cudaSuccess);  // no tokens: nothing to do
}

}  // namespace
}  // namespace kvscope
