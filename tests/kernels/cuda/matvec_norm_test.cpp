// The matmuls' fusions with their neighbours (matvec_q.cuh): an input norm
// (InputNorm) gives exactly the bits of an rms_norm launch followed by the
// plain matmul, and add_to_y exactly those of the matmul followed by the
// residual add, under both maths, for the multi and the gated launches, on
// one token, tiles and tails, and rows of one staging chunk and of several;
// and the norm's two loading paths (float4 or scalar) add in one order, as
// row_norm.cuh says. The CUDA backend's gpu_norm_fusion rests on these.
#include <algorithm>
#include <cstring>
#include <memory>

#include "cuda_test_util.h"
#include "kernels/cuda/matvec_q.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "quant_blocks.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

constexpr cuda::MatvecMath kMaths[] = {cuda::MatvecMath::kF32, cuda::MatvecMath::kTensorCores};
constexpr float kEps = 1e-5f;

int device_major() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    return 0;
  }
  return major;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Row lengths: SmolLM2's hidden size (18 quantisation blocks: one f32 staging
// chunk, three tensor-core stages) and 37 blocks (two f32 chunks, the last
// partial; five stages). Token counts: one, an f32 tile and a tail, a
// tensor-core tile of 32 and a tail.
constexpr int64_t kRowLens[] = {576, 32 * 37};
constexpr int64_t kTokenCounts[] = {1, 7, 9, 45};

// Runs `f` for both maths, both weight types, every row length and token
// count, each under its own trace.
template <typename F>
void for_each_case(F f) {
  for (cuda::MatvecMath math : kMaths) {
    for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
      for (int64_t row_len : kRowLens) {
        for (int64_t num_tokens : kTokenCounts) {
          SCOPED_TRACE(testing::Message() << (math == cuda::MatvecMath::kF32 ? "f32 " : "tensor cores ")
                                          << traits_of(type).name << " len=" << row_len << " tokens=" << num_tokens);
          f(math, type, row_len, num_tokens);
        }
      }
    }
  }
}

TEST(CudaMatvecNorm, NormedInputIsBitwiseRmsNormThenMatvec) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(71);
  const int64_t rows[3] = {64, 16, 23};  // q, k and an odd v
  const int64_t width = rows[0] + rows[1] + rows[2];
  for_each_case([&](cuda::MatvecMath math, TensorType type, int64_t row_len, int64_t num_tokens) {
    std::vector<std::unique_ptr<DeviceBuffer<uint8_t>>> w;
    for (int64_t r : rows) {
      w.push_back(std::make_unique<DeviceBuffer<uint8_t>>(cuda_test::random_quant_rows(type, r, row_len, rng)));
    }
    // Residual-stream-like rows: magnitudes up to 30, norm weights around 1.
    DeviceBuffer<float> dx(cuda_test::random_floats(static_cast<size_t>(num_tokens * row_len), rng, -30.0f, 30.0f));
    DeviceBuffer<float> dg(cuda_test::random_floats(static_cast<size_t>(row_len), rng, 0.2f, 2.0f));
    DeviceBuffer<float> dh(dx.size());
    LAUNCH_OK(cuda::rms_norm(dx.get(), dg.get(), num_tokens, row_len, kEps, dh.get(), nullptr));
    const cuda::InputNorm norm{dg.get(), kEps};

    // Q, K and V side by side in one launch.
    auto multi = [&](const float *x, cuda::InputNorm n, cuda::TensorCoreSplit split) {
      DeviceBuffer<float> dy(static_cast<size_t>(num_tokens * width));
      EXPECT_EQ(dy.poison(), cudaSuccess);
      const cuda::MatvecOutput outs[3] = {{w[0]->get(), rows[0], dy.get(), width},
                                          {w[1]->get(), rows[1], dy.get() + rows[0], width},
                                          {w[2]->get(), rows[2], dy.get() + rows[0] + rows[1], width}};
      EXPECT_EQ(cuda::matvec_q_multi(type, outs, 3, row_len, x, num_tokens, nullptr, math, split, n), cudaSuccess);
      return dy.download();
    };
    const std::vector<float> want = multi(dh.get(), {}, cuda::TensorCoreSplit::kNever);
    EXPECT_TRUE(same_bits(multi(dx.get(), norm, cuda::TensorCoreSplit::kNever), want)) << "multi";
    if (math == cuda::MatvecMath::kTensorCores && device_major() >= 9) {
      // Each rank of a split cluster computes the norms of its tokens itself.
      EXPECT_TRUE(same_bits(multi(dx.get(), norm, cuda::TensorCoreSplit::kAlways), want)) << "split";
    }

    // The gated pair: q's matrix as the gate, another as up.
    DeviceBuffer<uint8_t> w_up(cuda_test::random_quant_rows(type, rows[0], row_len, rng));
    auto glu = [&](const float *x, cuda::InputNorm n) {
      DeviceBuffer<float> out(static_cast<size_t>(num_tokens * rows[0]));
      EXPECT_EQ(out.poison(), cudaSuccess);
      EXPECT_EQ(
          cuda::matvec_q_glu(type, w[0]->get(), w_up.get(), rows[0], row_len, x, num_tokens, cuda::GluActivation::Silu,
                             out.get(), rows[0], nullptr, math, cuda::TensorCoreSplit::kAuto, n),
          cudaSuccess);
      return out.download();
    };
    EXPECT_TRUE(same_bits(glu(dx.get(), norm), glu(dh.get(), {}))) << "glu";
  });
}

// add_to_y: y += the product, one f32 addition per element (the residual
// add), so the bits of the plain launch's output added on the host.
TEST(CudaMatvecNorm, AddToYIsBitwiseTheResidualAdd) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(72);
  constexpr int64_t kRows = 97;
  for_each_case([&](cuda::MatvecMath math, TensorType type, int64_t row_len, int64_t num_tokens) {
    DeviceBuffer<uint8_t> dw(cuda_test::random_quant_rows(type, kRows, row_len, rng));
    DeviceBuffer<float> dx(cuda_test::random_floats(static_cast<size_t>(num_tokens * row_len), rng));
    const std::vector<float> residual =
        cuda_test::random_floats(static_cast<size_t>(num_tokens * kRows), rng, -50.0f, 50.0f);
    DeviceBuffer<float> dplain(residual.size()), dres(residual);
    LAUNCH_OK(cuda::matvec_q(type, dw.get(), kRows, row_len, dx.get(), num_tokens, dplain.get(), nullptr, math));
    const cuda::MatvecOutput out{dw.get(), kRows, dres.get(), kRows,
                                 /*add_to_y=*/true};
    LAUNCH_OK(cuda::matvec_q_multi(type, &out, 1, row_len, dx.get(), num_tokens, nullptr, math));
    std::vector<float> want = dplain.download();
    for (size_t i = 0; i < want.size(); ++i) want[i] = residual[i] + want[i];
    EXPECT_TRUE(same_bits(dres.download(), want));
  });
}

// rms_norm reads a row as float4 quads when it can and as scalars when it
// cannot (a row that is not 16-byte aligned), adding in the same order: the
// same row gives the same bits either way, in place and with a residual add.
TEST(CudaMatvecNorm, RmsNormBitsDoNotDependOnAlignment) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(73);
  for (int64_t n : {int64_t{576}, int64_t{100}, int64_t{4096}}) {
    for (int64_t num_tokens : {int64_t{1}, int64_t{9}}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " tokens=" << num_tokens);
      const size_t count = static_cast<size_t>(n * num_tokens);
      const auto x = cuda_test::random_floats(count, rng, -4.0f, 4.0f);
      const auto delta = cuda_test::random_floats(count, rng);
      const auto g = cuda_test::random_floats(static_cast<size_t>(n), rng, 0.5f, 1.5f);
      // The same values one float past an aligned start.
      std::vector<float> x1(count + 1), d1(count + 1), g1(static_cast<size_t>(n) + 1);
      std::copy(x.begin(), x.end(), x1.begin() + 1);
      std::copy(delta.begin(), delta.end(), d1.begin() + 1);
      std::copy(g.begin(), g.end(), g1.begin() + 1);
      DeviceBuffer<float> dx(x), dd(delta), dg(g), out(count), dx1(x1), dd1(d1), dg1(g1), out1(count + 1);
      LAUNCH_OK(cuda::add_rms_norm(dx.get(), dd.get(), dg.get(), num_tokens, n, kEps, out.get(), nullptr));
      LAUNCH_OK(cuda::add_rms_norm(dx1.get() + 1, dd1.get() + 1, dg1.get() + 1, num_tokens, n, kEps, out1.get() + 1,
                                   nullptr));
      const std::vector<float> aligned = out.download(), shifted = out1.download();
      EXPECT_TRUE(same_bits(aligned, std::vector<float>(shifted.begin() + 1, shifted.end())));
      const std::vector<float> sum = dx.download(), sum1 = dx1.download();
      EXPECT_TRUE(same_bits(sum, std::vector<float>(sum1.begin() + 1, sum1.end())));
    }
  }
}

}  // namespace
}  // namespace kvscope
