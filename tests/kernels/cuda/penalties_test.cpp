// kernels/cuda/penalties against the CPU sampler's formula written here with
// the same IEEE operations (engine/src/runtime/sampler.cpp, penalised_logit):
// bitwise on random rows of odd sizes and SmolLM2's 49152, with NaN,
// infinities and signed zeros among the penalised logits, through a
// source-row map that skips and reorders rows; every logit no entry names is
// left as it was, bit for bit. And sample_tokens through a source-row map
// draws what it draws on the gathered rows.
#include "kernels/cuda/penalties.cuh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/sample_tokens.cuh"

namespace kvscope {
namespace {

using cuda::DevicePenalties;
using cuda_test::DeviceBuffer;

float sanitize(float x) {
  constexpr float kMax = std::numeric_limits<float>::max();
  return std::isnan(x) ? -kMax : std::clamp(x, -kMax, kMax);
}

float penalised(float logit, float count, const DevicePenalties& p) {
  const float l = sanitize(logit);
  const float scaled = l > 0.0f ? l / p.repetition : l * p.repetition;
  return sanitize(scaled - std::fma(count, p.frequency, p.presence));
}

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

TEST(CudaPenalties, MatchTheCpuFormulaBitwise) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(31);
  std::vector<int64_t> sizes(std::begin(cuda_test::kOddSizes), std::end(cuda_test::kOddSizes));
  sizes.push_back(49152);
  const std::vector<DevicePenalties> kinds = {
      {1.3f, 0.0f, 0.0f}, {1.0f, 0.5f, 0.0f}, {1.0f, 0.0f, 0.25f}, {1.1f, 0.3f, 0.7f}, {0.8f, -0.2f, 0.1f},
  };
  int64_t num_entries = 0;
  for (int64_t n64 : sizes) {
    const int32_t n = static_cast<int32_t>(n64);
    SCOPED_TRACE(testing::Message() << "vocab " << n);
    constexpr int32_t kRows = 11;
    std::vector<float> logits = cuda_test::random_floats(static_cast<size_t>(kRows) * n, rng, -8.0f, 8.0f);
    // Rows 1, 3, ... drawn, in reverse order: skipped and reordered rows.
    std::vector<int32_t> source_rows;
    for (int32_t r = kRows - 2; r >= 1; r -= 2) source_rows.push_back(r);
    const int32_t num_draws = static_cast<int32_t>(source_rows.size());
    std::vector<DevicePenalties> params;
    std::vector<int32_t> entry_start = {0}, ids;
    std::vector<float> counts;
    for (int32_t d = 0; d < num_draws; ++d) {
      params.push_back(kinds[static_cast<size_t>(d) % kinds.size()]);
      std::vector<int32_t> all(static_cast<size_t>(n));
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      const int32_t k = d == 0 ? 0 : std::min<int32_t>(n, 1 + static_cast<int32_t>(rng() % 300));  // draw 0: none
      float* row = &logits[static_cast<size_t>(source_rows[static_cast<size_t>(d)]) * n];
      for (int32_t e = 0; e < k; ++e) {
        const int32_t id = all[static_cast<size_t>(e)];
        ids.push_back(id);
        counts.push_back(static_cast<float>(1 + rng() % 5));
        switch (e % 9) {  // the special values, at penalised positions
          case 1: row[id] = std::numeric_limits<float>::quiet_NaN(); break;
          case 2: row[id] = std::numeric_limits<float>::infinity(); break;
          case 3: row[id] = -std::numeric_limits<float>::infinity(); break;
          case 4: row[id] = -0.0f; break;
          case 5: row[id] = 0.0f; break;
          case 6: row[id] = std::numeric_limits<float>::max(); break;
          default: break;
        }
      }
      entry_start.push_back(static_cast<int32_t>(ids.size()));
    }
    num_entries += static_cast<int64_t>(ids.size());
    std::vector<float> want = logits;
    for (int32_t d = 0; d < num_draws; ++d) {
      float* row = &want[static_cast<size_t>(source_rows[static_cast<size_t>(d)]) * n];
      for (int32_t e = entry_start[static_cast<size_t>(d)]; e < entry_start[static_cast<size_t>(d) + 1]; ++e)
        row[ids[static_cast<size_t>(e)]] = penalised(row[ids[static_cast<size_t>(e)]], counts[static_cast<size_t>(e)],
                                                     params[static_cast<size_t>(d)]);
    }
    DeviceBuffer<float> dlogits(logits), dcounts(counts);
    DeviceBuffer<int32_t> dsource(source_rows), dstart(entry_start), dids(ids);
    DeviceBuffer<DevicePenalties> dparams(params);
    LAUNCH_OK(cuda::apply_penalties(dlogits.get(), num_draws, n, dsource.get(), dparams.get(), dstart.get(),
                                    dids.get(), dcounts.get(), nullptr));
    const std::vector<float> got = dlogits.download();
    int64_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) mismatches += bits(got[i]) != bits(want[i]);
    EXPECT_EQ(mismatches, 0);
  }
  EXPECT_GT(num_entries, 1000);
}

TEST(CudaPenalties, SampleTokensThroughSourceRowsEqualsOnGatheredRows) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(32);
  constexpr int32_t kVocab = 1999, kRows = 9;
  const std::vector<float> logits = cuda_test::random_floats(static_cast<size_t>(kRows) * kVocab, rng, -6.0f, 6.0f);
  const std::vector<int32_t> source_rows = {8, 2, 5, 0};
  std::vector<float> gathered;
  for (int32_t s : source_rows)
    gathered.insert(gathered.end(), logits.begin() + static_cast<int64_t>(s) * kVocab,
                    logits.begin() + static_cast<int64_t>(s + 1) * kVocab);
  const int32_t num_draws = static_cast<int32_t>(source_rows.size());
  const std::vector<cuda::DeviceSamplingParams> params = {
      {0.0f, 0, 1.0f, 0.0f}, {0.8f, 40, 0.95f, 0.05f}, {1.0f, 0, 0.9f, 0.0f}, {1.2f, 0, 1.0f, 0.02f}};
  const std::vector<double> uniforms = {0.0, 0.37, 0.91, 0.5};
  DeviceBuffer<float> dlogits(logits), dgathered(gathered), dws(cuda::sample_tokens_workspace_floats(num_draws, kVocab));
  DeviceBuffer<cuda::DeviceSamplingParams> dparams(params);
  DeviceBuffer<double> du(uniforms);
  DeviceBuffer<int32_t> dsource(source_rows), dmapped(static_cast<size_t>(num_draws)),
      ddirect(static_cast<size_t>(num_draws));
  CUDA_OK(dmapped.poison());
  CUDA_OK(ddirect.poison());
  LAUNCH_OK(cuda::sample_tokens(dlogits.get(), num_draws, kVocab, dparams.get(), du.get(), dws.get(), dws.size(),
                                dmapped.get(), nullptr, dsource.get()));
  LAUNCH_OK(cuda::sample_tokens(dgathered.get(), num_draws, kVocab, dparams.get(), du.get(), dws.get(), dws.size(),
                                ddirect.get(), nullptr));
  const std::vector<int32_t> mapped = dmapped.download(), direct = ddirect.download();
  EXPECT_EQ(mapped, direct);
  for (int32_t id : mapped) EXPECT_TRUE(id >= 0 && id < kVocab);
}

}  // namespace
}  // namespace kvscope
