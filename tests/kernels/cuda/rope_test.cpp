// kernels/cuda/rope against kernels/reference/rope, both pair styles, with
// and without freq factors, a token stride wider than the heads (rope on the
// Q part of a fused QKV row) and positions up to 4000. The GPU computes the
// angle as the reference does (rope.cu) except base^e: f64 pow rounded to
// f32 on the GPU, glibc's powf (within 0.82 ulp, not always correctly
// rounded) in the reference. One ulp of a frequency moves the angle by up to
// pos * 6e-8 rad (2.4e-4 at 4000), hence a tolerance of 1e-4 normalised; a
// wrong pair style, position or factor gives errors of order 1.
#include "kernels/cuda/rope.cuh"

#include "kernels/reference/elementwise.h"
#include "cuda_test_util.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

constexpr double kTolerance = 1e-4;

struct RopeCase {
  int64_t num_tokens;
  int64_t num_heads;
  int64_t head_dim;
  int64_t extra_stride;  // floats after the heads in each token row, left untouched
};

void check(RopeStyle style, bool with_factors, uint32_t seed) {
  std::mt19937 rng(seed);
  const RopeCase cases[] = {
      {1, 1, 2, 0}, {7, 3, 18, 5}, {17, 7, 54, 0}, {54, 1, 96, 17}, {97, 9, 64, 192 * 2},  // SmolLM2 Q in QKV
  };
  for (const RopeCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "tokens=" << c.num_tokens << " heads=" << c.num_heads << " dim=" << c.head_dim
                                    << " extra=" << c.extra_stride);
    const int64_t stride = c.num_heads * c.head_dim + c.extra_stride;
    const auto x = cuda_test::random_floats(static_cast<size_t>(c.num_tokens * stride), rng);
    std::vector<int32_t> positions(static_cast<size_t>(c.num_tokens));
    std::uniform_int_distribution<int32_t> pos_dist(0, 4000);
    for (int32_t& p : positions) p = pos_dist(rng);
    const auto factors = cuda_test::random_floats(static_cast<size_t>(c.head_dim / 2), rng, 1.0f, 8.0f);
    const float* host_factors = with_factors ? factors.data() : nullptr;
    const float base = 10000.0f;

    std::vector<float> ref = x;
    for (int64_t t = 0; t < c.num_tokens; ++t) {
      rope_ref(&ref[t * stride], c.num_heads, c.head_dim, positions[t], base, style, host_factors);
    }
    DeviceBuffer<float> dx(x), dfactors(factors);
    DeviceBuffer<int32_t> dpos(positions);
    LAUNCH_OK(cuda::rope(dx.get(), c.num_tokens, c.num_heads, c.head_dim, dpos.get(), base, style,
                         c.extra_stride == 0 ? 0 : stride, with_factors ? dfactors.get() : nullptr, nullptr));
    const std::vector<float> out = dx.download();
    EXPECT_LT(cuda_test::normalised_error(out, ref), kTolerance);
    for (int64_t t = 0; t < c.num_tokens; ++t) {  // the floats after the heads are not rope's
      for (int64_t i = c.num_heads * c.head_dim; i < stride; ++i) ASSERT_EQ(out[t * stride + i], x[t * stride + i]);
    }
  }
}

TEST(CudaRope, AdjacentPairs) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  check(RopeStyle::kAdjacentPairs, false, 21);
}

TEST(CudaRope, HalfSplit) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  check(RopeStyle::kHalfSplit, false, 22);
}

TEST(CudaRope, AdjacentPairsWithFreqFactors) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  check(RopeStyle::kAdjacentPairs, true, 23);
}

TEST(CudaRope, HalfSplitWithFreqFactors) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  check(RopeStyle::kHalfSplit, true, 24);
}

}  // namespace
}  // namespace kvscope
