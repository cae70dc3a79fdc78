// kernels/cuda/rms_norm against kernels/reference/rms_norm (f64 sum of squares).
// Tolerance 1e-5 normalised: f32 block reduction and rsqrtf (2 ulp) against f64.
#include "kernels/cuda/rms_norm.cuh"

#include "kernels/reference/elementwise.h"
#include "cuda_test_util.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

constexpr double kTolerance = 1e-5;
constexpr float kEps = 1e-5f;

std::vector<int64_t> row_sizes() {
  std::vector<int64_t> sizes(std::begin(cuda_test::kOddSizes), std::end(cuda_test::kOddSizes));
  sizes.push_back(576);   // SmolLM2 hidden size
  sizes.push_back(4096);  // a 7B model's
  return sizes;
}

TEST(CudaRmsNorm, MatchesReference) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(1);
  for (int64_t n : row_sizes()) {
    for (int64_t num_tokens : {int64_t{1}, int64_t{7}, int64_t{54}}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " tokens=" << num_tokens);
      const auto x = cuda_test::random_floats(static_cast<size_t>(n * num_tokens), rng, -3.0f, 3.0f);
      const auto w = cuda_test::random_floats(static_cast<size_t>(n), rng, 0.5f, 1.5f);
      std::vector<float> ref(x.size());
      for (int64_t t = 0; t < num_tokens; ++t) rms_norm_ref(&x[t * n], w.data(), n, kEps, &ref[t * n]);
      DeviceBuffer<float> dx(x), dw(w), dout(x.size());
      CUDA_OK(dout.poison());
      LAUNCH_OK(cuda::rms_norm(dx.get(), dw.get(), num_tokens, n, kEps, dout.get(), nullptr));
      EXPECT_LT(cuda_test::normalised_error(dout.download(), ref), kTolerance);
      EXPECT_EQ(dx.download(), x) << "the plain form must not change x";
    }
  }
}

TEST(CudaRmsNorm, InPlace) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(2);
  const int64_t n = 97, num_tokens = 17;
  const auto x = cuda_test::random_floats(static_cast<size_t>(n * num_tokens), rng);
  const auto w = cuda_test::random_floats(static_cast<size_t>(n), rng);
  std::vector<float> ref(x.size());
  for (int64_t t = 0; t < num_tokens; ++t) rms_norm_ref(&x[t * n], w.data(), n, kEps, &ref[t * n]);
  DeviceBuffer<float> dx(x), dw(w);
  LAUNCH_OK(cuda::rms_norm(dx.get(), dw.get(), num_tokens, n, kEps, dx.get(), nullptr));
  EXPECT_LT(cuda_test::normalised_error(dx.download(), ref), kTolerance);
}

// residual += delta, out = rms_norm(residual): both outputs checked.
TEST(CudaAddRmsNorm, MatchesAddThenReference) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(3);
  for (int64_t n : row_sizes()) {
    const int64_t num_tokens = 17;
    SCOPED_TRACE(testing::Message() << "n=" << n);
    const auto residual = cuda_test::random_floats(static_cast<size_t>(n * num_tokens), rng, -2.0f, 2.0f);
    const auto delta = cuda_test::random_floats(residual.size(), rng, -2.0f, 2.0f);
    const auto w = cuda_test::random_floats(static_cast<size_t>(n), rng, 0.5f, 1.5f);
    std::vector<float> sum(residual.size()), ref(residual.size());
    add_ref(residual.data(), delta.data(), static_cast<int64_t>(sum.size()), sum.data());
    for (int64_t t = 0; t < num_tokens; ++t) rms_norm_ref(&sum[t * n], w.data(), n, kEps, &ref[t * n]);
    DeviceBuffer<float> dres(residual), ddelta(delta), dw(w), dout(residual.size());
    CUDA_OK(dout.poison());
    LAUNCH_OK(cuda::add_rms_norm(dres.get(), ddelta.get(), dw.get(), num_tokens, n, kEps, dout.get(), nullptr));
    EXPECT_EQ(dres.download(), sum) << "the residual add is one f32 addition per element";
    EXPECT_LT(cuda_test::normalised_error(dout.download(), ref), kTolerance);
  }
}

}  // namespace
}  // namespace kvscope
