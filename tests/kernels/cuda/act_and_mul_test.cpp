// kernels/cuda/act_and_mul (SwiGLU, GeGLU) against the references.
// Tolerance 1e-5 normalised: f32 expf (a few ulp; GeGLU in the sigmoid form,
// which keeps relative accuracy for negative gates) against the f64 references.
#include "kernels/cuda/act_and_mul.cuh"

#include "kernels/reference/elementwise.h"
#include "cuda_test_util.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

constexpr double kTolerance = 1e-5;

using CudaOp = cudaError_t (*)(const float*, const float*, int64_t, float*, cudaStream_t);
using RefOp = void (*)(const float*, const float*, int64_t, float*);

void check_op(CudaOp op, RefOp ref_op, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> sizes(std::begin(cuda_test::kOddSizes), std::end(cuda_test::kOddSizes));
  sizes.push_back(1536 * 54);  // SmolLM2 intermediate size x 54 tokens
  for (int64_t n : sizes) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    const auto gate = cuda_test::random_floats(static_cast<size_t>(n), rng, -8.0f, 8.0f);
    const auto up = cuda_test::random_floats(static_cast<size_t>(n), rng, -2.0f, 2.0f);
    std::vector<float> ref(gate.size());
    ref_op(gate.data(), up.data(), n, ref.data());
    DeviceBuffer<float> dgate(gate), dup(up), dout(gate.size());
    CUDA_OK(dout.poison());
    LAUNCH_OK(op(dgate.get(), dup.get(), n, dout.get(), nullptr));
    EXPECT_LT(cuda_test::normalised_error(dout.download(), ref), kTolerance);
    // Aliased: out = gate.
    LAUNCH_OK(op(dgate.get(), dup.get(), n, dgate.get(), nullptr));
    EXPECT_LT(cuda_test::normalised_error(dgate.download(), ref), kTolerance);
  }
}

TEST(CudaActAndMul, SiluMatchesReference) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  check_op(cuda::silu_mul, silu_mul_ref, 11);
}

TEST(CudaActAndMul, GeluTanhMatchesReference) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  check_op(cuda::gelu_tanh_mul, gelu_tanh_mul_ref, 12);
}

}  // namespace
}  // namespace kvscope
