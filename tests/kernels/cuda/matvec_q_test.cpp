// kernels/cuda/matvec_q against kernels/reference/matmul (f64 dot products of
// the dequantised rows) for Q4_1 and Q8_0 weights in the GGUF block layout.
// Tolerance 1e-4 normalised: f32 sums over rows up to 1536 long, with the
// block scale factored out (d * sum q x + m * sum x), against f64.
#include "kernels/cuda/matvec_q.cuh"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>

#include "kernels/cuda/act_and_mul.cuh"
#include "kernels/reference/elementwise.h"
#include "kernels/reference/half.h"
#include "kernels/reference/matmul.h"
#include "cuda_test_util.h"
#include "quant_blocks.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

constexpr double kTolerance = 1e-4;

// Both ways of computing (matvec_q.cuh's MatvecMath): each test holds for each.
constexpr cuda::MatvecMath kMaths[] = {cuda::MatvecMath::kF32, cuda::MatvecMath::kTensorCores};
const char* math_name(cuda::MatvecMath m) { return m == cuda::MatvecMath::kF32 ? "f32" : "tensor cores"; }

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
  for (cuda::MatvecMath math : kMaths) {
    for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
      for (const Case& c : cases) {
        // 17: two f32 tiles of 8 and one token; 45: a tensor-core tile of 32 and a part of one
        for (int64_t num_tokens : {int64_t{1}, int64_t{7}, int64_t{17}, int64_t{45}}) {
          SCOPED_TRACE(testing::Message() << math_name(math) << " " << traits_of(type).name << " rows=" << c.num_rows
                                          << " len=" << c.row_len << " tokens=" << num_tokens);
          const std::vector<uint8_t> w = cuda_test::random_quant_rows(type, c.num_rows, c.row_len, rng);
          const auto x = cuda_test::random_floats(static_cast<size_t>(num_tokens * c.row_len), rng);
          std::vector<float> ref(static_cast<size_t>(num_tokens * c.num_rows));
          matmul_ref(type, w.data(), c.num_rows, c.row_len, x.data(), num_tokens, ref.data());
          DeviceBuffer<uint8_t> dw(w);
          DeviceBuffer<float> dx(x), dy(ref.size());
          CUDA_OK(dy.poison());
          LAUNCH_OK(
              cuda::matvec_q(type, dw.get(), c.num_rows, c.row_len, dx.get(), num_tokens, dy.get(), nullptr, math));
          EXPECT_LT(cuda_test::normalised_error(dy.download(), ref), kTolerance);
        }
      }
    }
  }
}

// Runs matvec_q on `x` (num_tokens rows of row_len) for both maths and both
// weight types after `scale` rewrote x, and checks each token's outputs
// against the f64 reference on their own (one norm over all tokens would let
// a token of 1e30 hide the others, or one of 1e-30 vanish in them).
template <typename Scale>
void expect_each_token_close(uint32_t seed, int64_t num_rows, int64_t row_len, int64_t num_tokens, Scale scale) {
  std::mt19937 rng(seed);
  for (cuda::MatvecMath math : kMaths) {
    for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
      SCOPED_TRACE(testing::Message() << math_name(math) << " " << traits_of(type).name);
      const std::vector<uint8_t> w = cuda_test::random_quant_rows(type, num_rows, row_len, rng);
      std::vector<float> x = cuda_test::random_floats(static_cast<size_t>(num_tokens * row_len), rng);
      scale(x);
      std::vector<float> ref(static_cast<size_t>(num_tokens * num_rows));
      matmul_ref(type, w.data(), num_rows, row_len, x.data(), num_tokens, ref.data());
      DeviceBuffer<uint8_t> dw(w);
      DeviceBuffer<float> dx(x), dy(ref.size());
      CUDA_OK(dy.poison());
      LAUNCH_OK(cuda::matvec_q(type, dw.get(), num_rows, row_len, dx.get(), num_tokens, dy.get(), nullptr, math));
      const std::vector<float> y = dy.download();
      for (int64_t t = 0; t < num_tokens; ++t) {
        const std::vector<float> got(y.begin() + t * num_rows, y.begin() + (t + 1) * num_rows);
        const std::vector<float> want(ref.begin() + t * num_rows, ref.begin() + (t + 1) * num_rows);
        EXPECT_LT(cuda_test::normalised_error(got, want), kTolerance) << "token " << t;
      }
    }
  }
}

// Activations far beyond f16's range (the tensor-core path scales each
// 32-element block by a power of two) beside small ones in the same block,
// and in the next block: both ways stay within the tolerance.
TEST(CudaMatvecQ, LargeActivationsKeepTheirPrecision) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  constexpr int64_t kLen = 32 * 5;
  expect_each_token_close(66, 37, kLen, 3, [](std::vector<float>& x) {
    x[3] = 3.0e5f;                // token 0, block 0: 2^18 among values near 1
    x[kLen + 40] = -7.0e4f;       // token 1, block 1: just past f16's 65504
    x[2 * kLen + 100] = 1.0e30f;  // token 2, block 3: near f32's range
  });
}

// Tokens whose activations are all tiny (the tensor-core path scales a block
// up as well as down; without that, 1e-6 keeps a few bits of f16's
// subnormals and 1e-30 becomes zero), and one with a 1e-38 block (an f32
// subnormal's neighbourhood) beside ordinary ones.
TEST(CudaMatvecQ, SmallActivationsKeepTheirPrecision) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  constexpr int64_t kLen = 32 * 3;
  expect_each_token_close(67, 21, kLen, 3, [](std::vector<float>& x) {
    for (int64_t j = 0; j < kLen; ++j) {
      x[j] *= 1.0e-6f;          // token 0: every block near 1e-6
      x[kLen + j] *= 1.0e-30f;  // token 1: near 1e-30
    }
    for (int64_t j = 32; j < 64; ++j) x[2 * kLen + j] *= 1.0e-38f;  // token 2, block 1 only
  });
}

// The order matvec_q.cu documents, on the host: lane l's partial sums the
// blocks b = l, l + 32, ... of the row, each block an FMA chain over its 32
// quants scaled by d (plus m times the sum of x in j order, for Q4_1); then
// the xor tree over the 32 partials. Compiled with -ffp-contract=off, so each
// operation rounds as written.
float documented_order_dot(TensorType type, const uint8_t* row, const float* x, int64_t row_len) {
  const int64_t block_bytes = type == TensorType::Q8_0 ? 34 : 20;
  float partial[32] = {};
  for (int64_t b = 0; b < row_len / 32; ++b) {
    const uint8_t* block = row + b * block_bytes;
    const float d = fp16_to_f32(load_u16(block));
    float q[32];
    float m = 0.0f;
    if (type == TensorType::Q8_0) {
      for (int j = 0; j < 32; ++j) q[j] = static_cast<float>(static_cast<int8_t>(block[2 + j]));
    } else {
      m = fp16_to_f32(load_u16(block + 2));
      for (int j = 0; j < 16; ++j) {
        q[j] = static_cast<float>(block[4 + j] & 15);
        q[j + 16] = static_cast<float>(block[4 + j] >> 4);
      }
    }
    const float* xb = x + b * 32;
    float qx = 0.0f;
    float sx = 0.0f;
    for (int j = 0; j < 32; ++j) qx = std::fma(q[j], xb[j], qx);
    for (int j = 0; j < 32; ++j) sx = sx + xb[j];
    const float dot = type == TensorType::Q8_0 ? d * qx : d * qx + m * sx;
    partial[b % 32] = partial[b % 32] + dot;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    float next[32];
    for (int l = 0; l < 32; ++l) next[l] = partial[l] + partial[l ^ offset];
    std::copy(next, next + 32, partial);
  }
  return partial[0];
}

// The kernel's bits are the documented order's, exactly: row lengths of one
// chunk of 32 blocks and of several (the last one partial), Q8_0 rows that
// start 2 bytes past a 4-byte boundary (37 blocks of 34 bytes), one token and
// a tile and a tail.
TEST(CudaMatvecQ, BitsFollowTheDocumentedOrder) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(65);
  for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
    for (int64_t row_len : {int64_t{32}, int64_t{576}, int64_t{32 * 37}, int64_t{1536}, int64_t{32 * 97}}) {
      for (int64_t num_tokens : {int64_t{1}, int64_t{9}}) {
        SCOPED_TRACE(testing::Message() << traits_of(type).name << " len=" << row_len << " tokens=" << num_tokens);
        constexpr int64_t kRows = 13;
        const std::vector<uint8_t> w = cuda_test::random_quant_rows(type, kRows, row_len, rng);
        const auto x = cuda_test::random_floats(static_cast<size_t>(num_tokens * row_len), rng);
        DeviceBuffer<uint8_t> dw(w);
        DeviceBuffer<float> dx(x), dy(static_cast<size_t>(num_tokens * kRows));
        CUDA_OK(dy.poison());
        LAUNCH_OK(cuda::matvec_q(type, dw.get(), kRows, row_len, dx.get(), num_tokens, dy.get(), nullptr));
        const std::vector<float> y = dy.download();
        const int64_t row_bytes = row_len / 32 * (type == TensorType::Q8_0 ? 34 : 20);
        int mismatches = 0;
        for (int64_t t = 0; t < num_tokens; ++t) {
          for (int64_t r = 0; r < kRows; ++r) {
            const float want = documented_order_dot(type, &w[static_cast<size_t>(r * row_bytes)],
                                                    &x[static_cast<size_t>(t * row_len)], row_len);
            const float got = y[static_cast<size_t>(t * kRows + r)];
            if (std::memcmp(&got, &want, sizeof(float)) != 0 && ++mismatches <= 3) {
              ADD_FAILURE() << "token " << t << " row " << r << ": " << got << " vs " << want;
            }
          }
        }
        EXPECT_EQ(mismatches, 0);
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
  for (cuda::MatvecMath math : kMaths) {
    for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
      SCOPED_TRACE(testing::Message() << math_name(math) << " " << traits_of(type).name);
      DeviceBuffer<uint8_t> dw(cuda_test::random_quant_rows(type, kRows, kLen, rng));
      const auto x = cuda_test::random_floats(static_cast<size_t>(kTokens * kLen), rng);
      DeviceBuffer<float> dx(x);
      auto run = [&](int64_t first, int64_t count) {
        DeviceBuffer<float> dy(static_cast<size_t>(count * kRows));
        EXPECT_EQ(dy.poison(), cudaSuccess);
        EXPECT_EQ(cuda::matvec_q(type, dw.get(), kRows, kLen, dx.get() + first * kLen, count, dy.get(), nullptr, math),
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
}

// matvec_q_multi (a layer's Q, K and V in one launch, written side by side)
// gives each matrix exactly matvec_q's bits, whatever the row counts and
// however the outputs interleave in a token's row.
TEST(CudaMatvecQ, MultiEqualsSeparateLaunches) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(63);
  constexpr int64_t kLen = 32 * 18, kTokens = 19;
  const int64_t rows[3] = {576, 192, 7};  // SmolLM2's q and k, and an odd one
  const int64_t width = rows[0] + rows[1] + rows[2] + 5;  // padding a token's row
  for (cuda::MatvecMath math : kMaths) {
    for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
      SCOPED_TRACE(testing::Message() << math_name(math) << " " << traits_of(type).name);
      std::vector<std::unique_ptr<DeviceBuffer<uint8_t>>> w;
      for (int64_t r : rows) {
        w.push_back(std::make_unique<DeviceBuffer<uint8_t>>(cuda_test::random_quant_rows(type, r, kLen, rng)));
      }
      DeviceBuffer<float> dx(cuda_test::random_floats(static_cast<size_t>(kTokens * kLen), rng));
      DeviceBuffer<float> dy(static_cast<size_t>(kTokens * width));
      CUDA_OK(dy.poison());
      cuda::MatvecOutput outs[3];
      int64_t at = 0;
      for (int j = 0; j < 3; ++j) {
        outs[j] = {w[static_cast<size_t>(j)]->get(), rows[j], dy.get() + at, width};
        at += rows[j];
      }
      LAUNCH_OK(cuda::matvec_q_multi(type, outs, 3, kLen, dx.get(), kTokens, nullptr, math));
      const std::vector<float> y = dy.download();
      at = 0;
      for (int j = 0; j < 3; ++j) {
        DeviceBuffer<float> alone(static_cast<size_t>(kTokens * rows[j]));
        LAUNCH_OK(cuda::matvec_q(type, w[static_cast<size_t>(j)]->get(), rows[j], kLen, dx.get(), kTokens, alone.get(),
                                 nullptr, math));
        const std::vector<float> want = alone.download();
        for (int64_t t = 0; t < kTokens; ++t) {
          EXPECT_EQ(0, std::memcmp(&y[static_cast<size_t>(t * width + at)], &want[static_cast<size_t>(t * rows[j])],
                                   rows[j] * sizeof(float)))
              << "output " << j << ", token " << t;
        }
        at += rows[j];
      }
      for (int64_t t = 0; t < kTokens; ++t) {  // the padding is never written
        for (int64_t i = at; i < width; ++i) EXPECT_TRUE(std::isnan(y[static_cast<size_t>(t * width + i)]));
      }
    }
  }
}

// The split rule alone (no device): kAuto splits only what gpu_kernel_bench
// showed to pay on an H200 (rows of 4 to 8 stages of 256 weights, one group
// of up to 32 tokens, fewer 16-row groups than SMs: SmolLM2's ffn_down at a
// decode step), kAlways every row of 2 to 8 stages, and nothing splits
// before Hopper or under kNever.
TEST(CudaMatvecQHarness, SplitRuleIsWhatWasMeasured) {
  using cuda::TensorCoreSplit;
  const auto ranks = [](int64_t rows, int64_t len, int64_t tokens, TensorCoreSplit split, int major = 9,
                        int sms = 132) { return cuda::tensor_core_split_ranks(rows, len, tokens, split, major, sms); };
  constexpr TensorCoreSplit kAuto = TensorCoreSplit::kAuto, kAlways = TensorCoreSplit::kAlways;
  for (int64_t tokens : {1, 16, 32}) EXPECT_EQ(ranks(576, 1536, tokens, kAuto), 6) << tokens;  // ffn_down
  EXPECT_EQ(ranks(576, 1536, 33, kAuto), 0);  // two groups of tokens
  EXPECT_EQ(ranks(576, 1536, 64, kAuto), 0);
  EXPECT_EQ(ranks(576, 576, 1, kAuto), 0);   // q / o: 3 stages
  EXPECT_EQ(ranks(1536, 576, 1, kAuto), 0);  // gate / up
  EXPECT_EQ(ranks(960, 576, 1, kAuto), 0);   // q | k | v
  EXPECT_EQ(ranks(49152, 576, 1, kAuto), 0);  // the head
  EXPECT_EQ(ranks(576, 576, 1, kAlways), 3);
  EXPECT_EQ(ranks(13, 32 * 9, 1, kAlways), 2);  // 9 blocks of 32: 2 stages, the last partial
  EXPECT_EQ(ranks(13, 32 * 9, 1, kAuto), 0);
  EXPECT_EQ(ranks(13, 2048, 1, kAuto), 8);   // 8 stages: the portable cluster size
  EXPECT_EQ(ranks(13, 2080, 1, kAlways), 0);  // 9 stages: too many ranks
  EXPECT_EQ(ranks(13, 256, 1, kAlways), 0);   // one stage: nothing to split
  EXPECT_EQ(ranks(131 * 16, 1536, 1, kAuto), 6);  // 131 groups on 132 SMs
  EXPECT_EQ(ranks(132 * 16, 1536, 1, kAuto), 0);  // as many groups as SMs
  EXPECT_EQ(ranks(131 * 16 + 1, 1536, 1, kAuto), 0);
  EXPECT_EQ(ranks(576, 1536, 1, TensorCoreSplit::kNever), 0);
  EXPECT_EQ(ranks(576, 1536, 1, kAuto, 8, 108), 0);  // an A100: no clusters
  EXPECT_EQ(ranks(576, 1536, 1, kAlways, 8, 108), 0);
  EXPECT_EQ(ranks(0, 1536, 1, kAlways), 0);
  EXPECT_EQ(ranks(576, 1536, 0, kAlways), 0);
}

// The sweep rule alone (no device): kAuto sweeps launches of more than four
// blocks per multiprocessor, with rows of at most 640 weights, on Hopper or
// later, taking as many row groups a block as leave about two blocks per
// multiprocessor: SmolLM2's head (3,072 row groups) at 64 tokens 24 a block,
// at one token 12; a 512-token chunk's gate and up 6, its q / k / v 4; not
// its ffn_down (1,536 weights a row), nor a 64-sequence decode step's layer
// matrices (a 256-sequence step's gate and up do sweep); at most 64 groups a
// block, however many tokens.
TEST(CudaMatvecQHarness, SweepRuleSweepsOnlyLaunchesOfManyBlocks) {
  using cuda::TensorCoreSplit;
  const auto groups = [](int64_t rows, int64_t len, int64_t tokens, TensorCoreSplit split = TensorCoreSplit::kAuto,
                         int major = 9, int sms = 132) {
    return cuda::tensor_core_sweep_groups(rows, len, tokens, split, major, sms);
  };
  EXPECT_EQ(groups(49152, 576, 64), 24);
  EXPECT_EQ(groups(49152, 576, 1), 12);
  EXPECT_EQ(groups(1536, 576, 512), 6);
  EXPECT_EQ(groups(960, 576, 512), 4);
  EXPECT_EQ(groups(576, 1536, 512), 1);   // rows too long to stage whole
  EXPECT_EQ(groups(1536, 576, 64), 1);    // 192 blocks: the plain layout fills the GPU
  EXPECT_EQ(groups(960, 576, 64), 1);
  EXPECT_EQ(groups(262144, 640, 1), 63);  // Gemma 3's head, 640 weights a row
  EXPECT_EQ(groups(1536, 576, 256), 3);   // 96 x 8 blocks
  EXPECT_EQ(groups(49152, 576, 32 * 600), 64);  // 600 token groups: each block would walk the whole head
  EXPECT_EQ(groups(49152, 576, 64, TensorCoreSplit::kAuto, 8, 108), 1);  // before Hopper
  EXPECT_EQ(groups(49152, 576, 64, TensorCoreSplit::kNever), 1);
  EXPECT_EQ(groups(49152, 576, 64, TensorCoreSplit::kAlways), 1);
  EXPECT_EQ(groups(13, 32, 1, TensorCoreSplit::kSweep), 3);
  EXPECT_EQ(groups(13, 672, 1, TensorCoreSplit::kSweep), 1);
  EXPECT_EQ(groups(0, 576, 64), 1);
  EXPECT_EQ(groups(49152, 576, 0), 1);
  // A forced sweep is never also split.
  EXPECT_EQ(cuda::tensor_core_split_ranks(576, 1536, 1, TensorCoreSplit::kSweep, 9, 132), 0);
}

// The tensor-core kernels split a launch of few blocks over clusters of one
// block per stage (matvec_mma.cu) with the unsplit launch's bits: forced
// both ways, on rows of 2, 3, 6 and 8 stages (the last one partial), odd
// output heights side by side, one token, a tile and a part of one, the
// outputs the same to the bit (poisoned first, so a rank that wrote nothing
// would show).
TEST(CudaMatvecQ, TensorCoreSplitKeepsTheBits) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  int device = 0, major = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major < 9) GTEST_SKIP() << "the split needs compute capability 9.0 (thread block clusters)";
  std::mt19937 rng(67);
  constexpr cuda::MatvecMath kTensor = cuda::MatvecMath::kTensorCores;
  constexpr int64_t kRowsOf[3] = {13, 16, 35};
  constexpr int64_t kAll = kRowsOf[0] + kRowsOf[1] + kRowsOf[2];
  for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
    for (int64_t row_len : {int64_t{32 * 9}, int64_t{576}, int64_t{1536}, int64_t{32 * 61}}) {
      const int stages = static_cast<int>((row_len / 32 + 7) / 8);
      for (int64_t num_tokens : {int64_t{1}, int64_t{32}, int64_t{45}}) {
        SCOPED_TRACE(testing::Message() << traits_of(type).name << " len=" << row_len << " tokens=" << num_tokens);
        ASSERT_EQ(cuda::tensor_core_split_ranks(kAll, row_len, num_tokens, cuda::TensorCoreSplit::kAlways), stages);
        ASSERT_EQ(cuda::tensor_core_split_ranks(kAll, row_len, num_tokens, cuda::TensorCoreSplit::kNever), 0);
        DeviceBuffer<uint8_t> w0(cuda_test::random_quant_rows(type, kRowsOf[0], row_len, rng));
        DeviceBuffer<uint8_t> w1(cuda_test::random_quant_rows(type, kRowsOf[1], row_len, rng));
        DeviceBuffer<uint8_t> w2(cuda_test::random_quant_rows(type, kRowsOf[2], row_len, rng));
        DeviceBuffer<uint8_t> w3(cuda_test::random_quant_rows(type, kRowsOf[2], row_len, rng));
        DeviceBuffer<float> dx(cuda_test::random_floats(static_cast<size_t>(num_tokens * row_len), rng));
        auto multi = [&](cuda::TensorCoreSplit split) {
          DeviceBuffer<float> dy(static_cast<size_t>(num_tokens * kAll));
          EXPECT_EQ(dy.poison(), cudaSuccess);
          const cuda::MatvecOutput outs[3] = {{w0.get(), kRowsOf[0], dy.get(), kAll},
                                              {w1.get(), kRowsOf[1], dy.get() + kRowsOf[0], kAll},
                                              {w2.get(), kRowsOf[2], dy.get() + kRowsOf[0] + kRowsOf[1], kAll}};
          EXPECT_EQ(cuda::matvec_q_multi(type, outs, 3, row_len, dx.get(), num_tokens, nullptr, kTensor, split),
                    cudaSuccess);
          return dy.download();
        };
        auto glu = [&](cuda::TensorCoreSplit split) {
          DeviceBuffer<float> out(static_cast<size_t>(num_tokens * kRowsOf[2]));
          EXPECT_EQ(out.poison(), cudaSuccess);
          EXPECT_EQ(cuda::matvec_q_glu(type, w2.get(), w3.get(), kRowsOf[2], row_len, dx.get(), num_tokens,
                                       cuda::GluActivation::Silu, out.get(), kRowsOf[2], nullptr, kTensor, split),
                    cudaSuccess);
          return out.download();
        };
        const std::vector<float> unsplit = multi(cuda::TensorCoreSplit::kNever);
        const std::vector<float> split = multi(cuda::TensorCoreSplit::kAlways);
        EXPECT_EQ(0, std::memcmp(unsplit.data(), split.data(), unsplit.size() * sizeof(float))) << "multi";
        const std::vector<float> glu_unsplit = glu(cuda::TensorCoreSplit::kNever);
        const std::vector<float> glu_split = glu(cuda::TensorCoreSplit::kAlways);
        EXPECT_EQ(0, std::memcmp(glu_unsplit.data(), glu_split.data(), glu_unsplit.size() * sizeof(float))) << "glu";
      }
    }
  }
}

// The sweep (matvec_mma.cu): a block stages its tokens' whole rows once and
// takes several 16-row groups one after another, with the plain layout's
// bits. Forced (3 groups a block) against plain, on rows of 1, 9, 18 and 20
// blocks (a partial last stage; the longest row a sweep stages) and one past
// that (both plain), odd output heights side by side (4 and 10 groups: a
// partial last run), with an input norm and without, a residual add,
// one token, a tile, a part of one and three groups of tokens; the GLU under
// both activations; outputs poisoned first, so a group no block wrote would
// show.
TEST(CudaMatvecQ, TensorCoreSweepKeepsTheBits) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  int device = 0, major = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major < 9) GTEST_SKIP() << "the sweep is launched on compute capability 9.0 or later";
  std::mt19937 rng(71);
  constexpr cuda::MatvecMath kTensor = cuda::MatvecMath::kTensorCores;
  constexpr cuda::TensorCoreSplit kPlain = cuda::TensorCoreSplit::kNever, kSweep = cuda::TensorCoreSplit::kSweep;
  for (const std::array<int64_t, 3>& heights : {std::array<int64_t, 3>{13, 16, 35}, std::array<int64_t, 3>{45, 100, 7}}) {
    const int64_t all = heights[0] + heights[1] + heights[2];
    for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
      for (int64_t row_len : {int64_t{32}, int64_t{32 * 9}, int64_t{576}, int64_t{640}, int64_t{672}}) {
        const bool sweeps = row_len <= 640;
        ASSERT_EQ(cuda::tensor_core_sweep_groups(all, row_len, 1, kSweep), sweeps ? 3 : 1);
        for (int64_t num_tokens : {int64_t{1}, int64_t{32}, int64_t{45}, int64_t{77}}) {
          for (bool with_norm : {false, true}) {
            SCOPED_TRACE(testing::Message() << traits_of(type).name << " rows=" << all << " len=" << row_len
                                            << " tokens=" << num_tokens << (with_norm ? " normed" : ""));
            DeviceBuffer<uint8_t> w0(cuda_test::random_quant_rows(type, heights[0], row_len, rng));
            DeviceBuffer<uint8_t> w1(cuda_test::random_quant_rows(type, heights[1], row_len, rng));
            DeviceBuffer<uint8_t> w2(cuda_test::random_quant_rows(type, heights[2], row_len, rng));
            DeviceBuffer<uint8_t> w3(cuda_test::random_quant_rows(type, heights[2], row_len, rng));
            DeviceBuffer<float> dx(cuda_test::random_floats(static_cast<size_t>(num_tokens * row_len), rng));
            DeviceBuffer<float> gamma(cuda_test::random_floats(static_cast<size_t>(row_len), rng));
            const std::vector<float> residual = cuda_test::random_floats(static_cast<size_t>(num_tokens * all), rng);
            const cuda::InputNorm norm = with_norm ? cuda::InputNorm{gamma.get(), 1e-5f} : cuda::InputNorm{};
            auto multi = [&](cuda::TensorCoreSplit layout) {
              DeviceBuffer<float> dy(static_cast<size_t>(num_tokens * all));
              EXPECT_EQ(dy.poison(), cudaSuccess);
              // The middle output adds to what is there: the residual first.
              for (int64_t t = 0; t < num_tokens; ++t) {
                EXPECT_EQ(cudaMemcpy(dy.get() + t * all + heights[0], &residual[static_cast<size_t>(t * all)],
                                     static_cast<size_t>(heights[1]) * sizeof(float), cudaMemcpyHostToDevice),
                          cudaSuccess);
              }
              const cuda::MatvecOutput outs[3] = {{w0.get(), heights[0], dy.get(), all},
                                                  {w1.get(), heights[1], dy.get() + heights[0], all, true},
                                                  {w2.get(), heights[2], dy.get() + heights[0] + heights[1], all}};
              EXPECT_EQ(cuda::matvec_q_multi(type, outs, 3, row_len, dx.get(), num_tokens, nullptr, kTensor, layout,
                                             norm),
                        cudaSuccess);
              return dy.download();
            };
            auto glu = [&](cuda::TensorCoreSplit layout, cuda::GluActivation activation) {
              DeviceBuffer<float> out(static_cast<size_t>(num_tokens * all));
              EXPECT_EQ(out.poison(), cudaSuccess);
              EXPECT_EQ(cuda::matvec_q_glu(type, w2.get(), w3.get(), heights[2], row_len, dx.get(), num_tokens,
                                           activation, out.get(), all, nullptr, kTensor, layout, norm),
                        cudaSuccess);
              return out.download();
            };
            const std::vector<float> plain = multi(kPlain), swept = multi(kSweep);
            EXPECT_EQ(0, std::memcmp(plain.data(), swept.data(), plain.size() * sizeof(float))) << "multi";
            for (cuda::GluActivation activation : {cuda::GluActivation::Silu, cuda::GluActivation::GeluTanh}) {
              const std::vector<float> glu_plain = glu(kPlain, activation), glu_swept = glu(kSweep, activation);
              EXPECT_EQ(0, std::memcmp(glu_plain.data(), glu_swept.data(), glu_plain.size() * sizeof(float)))
                  << "glu " << (activation == cuda::GluActivation::Silu ? "silu" : "gelu");
            }
          }
        }
      }
    }
  }
}

// kAuto sweeps a launch of many blocks (here 250 row groups times 3 groups
// of tokens on an H200's 132 multiprocessors) with the plain launch's bits,
// as the engine's head and prefill chunks launch it.
TEST(CudaMatvecQ, AutoSweepsManyBlocksWithThePlainBits) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  int device = 0, major = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (major < 9) GTEST_SKIP() << "the sweep is launched on compute capability 9.0 or later";
  std::mt19937 rng(73);
  constexpr int64_t kRows = 4000, kLen = 576, kTokens = 77;
  const int groups = cuda::tensor_core_sweep_groups(kRows, kLen, kTokens, cuda::TensorCoreSplit::kAuto);
  ASSERT_EQ(groups, cuda::tensor_core_sweep_groups(kRows, kLen, kTokens, cuda::TensorCoreSplit::kAuto, major, sms));
  if (4 * sms >= 250 * 3) GTEST_SKIP() << sms << " multiprocessors: a launch of 750 blocks does not sweep";
  ASSERT_GT(groups, 1);
  for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
    SCOPED_TRACE(traits_of(type).name);
    DeviceBuffer<uint8_t> dw(cuda_test::random_quant_rows(type, kRows, kLen, rng));
    DeviceBuffer<float> dx(cuda_test::random_floats(static_cast<size_t>(kTokens * kLen), rng));
    auto run = [&](cuda::TensorCoreSplit layout) {
      DeviceBuffer<float> dy(static_cast<size_t>(kTokens * kRows));
      EXPECT_EQ(dy.poison(), cudaSuccess);
      EXPECT_EQ(cuda::matvec_q(type, dw.get(), kRows, kLen, dx.get(), kTokens, dy.get(), nullptr,
                               cuda::MatvecMath::kTensorCores, layout),
                cudaSuccess);
      return dy.download();
    };
    const std::vector<float> plain = run(cuda::TensorCoreSplit::kNever), automatic = run(cuda::TensorCoreSplit::kAuto);
    EXPECT_EQ(0, std::memcmp(plain.data(), automatic.data(), plain.size() * sizeof(float)));
  }
}

// matvec_q_glu equals the gate and up matvec_q launches followed by
// silu_mul / gelu_tanh_mul, bit for bit, and the reference within tolerance.
TEST(CudaMatvecQ, GluEqualsProjectionsThenActivation) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(64);
  constexpr int64_t kRows = 1536, kLen = 576, kTokens = 13;
  for (cuda::MatvecMath math : kMaths) {
    for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
      for (cuda::GluActivation act : {cuda::GluActivation::Silu, cuda::GluActivation::GeluTanh}) {
        SCOPED_TRACE(testing::Message() << math_name(math) << " " << traits_of(type).name
                                        << (act == cuda::GluActivation::Silu ? " silu" : " gelu"));
        const auto wg = cuda_test::random_quant_rows(type, kRows, kLen, rng);
        const auto wu = cuda_test::random_quant_rows(type, kRows, kLen, rng);
        const auto x = cuda_test::random_floats(static_cast<size_t>(kTokens * kLen), rng);
        DeviceBuffer<uint8_t> dg(wg), du(wu);
        DeviceBuffer<float> dx(x), gate(static_cast<size_t>(kTokens * kRows)), up(gate.size()), fused(gate.size());
        CUDA_OK(fused.poison());
        LAUNCH_OK(cuda::matvec_q_glu(type, dg.get(), du.get(), kRows, kLen, dx.get(), kTokens, act, fused.get(), kRows,
                                     nullptr, math));
        LAUNCH_OK(cuda::matvec_q(type, dg.get(), kRows, kLen, dx.get(), kTokens, gate.get(), nullptr, math));
        LAUNCH_OK(cuda::matvec_q(type, du.get(), kRows, kLen, dx.get(), kTokens, up.get(), nullptr, math));
        LAUNCH_OK(act == cuda::GluActivation::Silu
                      ? cuda::silu_mul(gate.get(), up.get(), kTokens * kRows, gate.get(), nullptr)
                      : cuda::gelu_tanh_mul(gate.get(), up.get(), kTokens * kRows, gate.get(), nullptr));
        const std::vector<float> got = fused.download(), want = gate.download();
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
        // And the reference: f64 products, then the f64 activation.
        std::vector<float> rg(got.size()), ru(got.size()), ref(got.size());
        matmul_ref(type, wg.data(), kRows, kLen, x.data(), kTokens, rg.data());
        matmul_ref(type, wu.data(), kRows, kLen, x.data(), kTokens, ru.data());
        (act == cuda::GluActivation::Silu ? silu_mul_ref : gelu_tanh_mul_ref)(rg.data(), ru.data(),
                                                                              kTokens * kRows, ref.data());
        EXPECT_LT(cuda_test::normalised_error(got, ref), kTolerance);
      }
    }
  }
}

}  // namespace
}  // namespace kvscope
