// kernels/cuda/sample_tokens against a host implementation of the CPU
// sampler's rule (engine/src/runtime/sampler.cpp: probability_distribution,
// then draw_token), written here the plain way: sort everything by the CPU's
// `better` order, cut, draw. Exact ids on random logits (odd vocabulary sizes
// and SmolLM2's 49152), many uniforms per parameter set, and rows full of
// ties, NaN, infinities and signed zeros, so every tie rule is exercised.
// A draw may differ only at a near-tie the reference itself identifies: the
// draw target or the top-p mass moved by 1e-6 relative changes its answer
// (the device sums in a tree, the CPU in sequence, and float exp may differ
// in its last bit); such draws are counted and must stay under 1%.
#include "kernels/cuda/sample_tokens.cuh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "cuda_test_util.h"

namespace kvscope {
namespace {

using cuda::DeviceSamplingParams;
using cuda_test::DeviceBuffer;

using TokenProb = std::pair<int32_t, float>;

bool better(const TokenProb& a, const TokenProb& b) {
  return a.second > b.second || (a.second == b.second && a.first < b.first);
}

float sanitize(float x) {
  constexpr float kMax = std::numeric_limits<float>::max();
  return std::isnan(x) ? -kMax : std::clamp(x, -kMax, kMax);
}

// The CPU sampler's rule (no penalties); mass_scale and target_scale move the
// top-p mass and the draw target to probe for near-ties.
int32_t host_sample(const float* logits, int32_t n, const DeviceSamplingParams& prm, double u,
                    double mass_scale = 1.0, double target_scale = 1.0) {
  std::vector<TokenProb> c;
  for (int32_t i = 0; i < n; ++i) c.emplace_back(i, sanitize(logits[i]));
  if (prm.temperature == 0.0f) return std::min_element(c.begin(), c.end(), better)->first;
  const bool top_k_on = prm.top_k > 0 && prm.top_k < n;
  double z = 0.0;
  if (top_k_on) {
    std::sort(c.begin(), c.end(), better);
    c.resize(static_cast<size_t>(prm.top_k));
  }
  const float max = std::max_element(c.begin(), c.end(), [](auto& a, auto& b) { return a.second < b.second; })->second;
  for (TokenProb& e : c) {
    e.second = std::exp((e.second - max) / prm.temperature);
    z += e.second;
  }
  if (prm.top_p < 1.0f) {
    if (!top_k_on) std::sort(c.begin(), c.end(), better);  // by weight, ties by id
    const double mass = static_cast<double>(prm.top_p) * z * mass_scale;
    double cum = 0.0;
    for (size_t i = 0; i < c.size(); ++i) {
      cum += c[i].second;
      if (cum >= mass) {
        c.resize(i + 1);
        break;
      }
    }
  }
  if (prm.min_p > 0.0f) {
    c.erase(std::remove_if(c.begin(), c.end(), [&](const TokenProb& e) { return e.second < prm.min_p; }), c.end());
  }
  double sum = 0.0;
  for (const TokenProb& e : c) sum += e.second;
  for (TokenProb& e : c) e.second = static_cast<float>(e.second / sum);
  double total = 0.0;  // draw_token
  for (const TokenProb& e : c) total += e.second;
  const double target = u * total * target_scale;
  double cum = 0.0;
  for (const TokenProb& e : c) {
    cum += e.second;
    if (cum > target) return e.first;
  }
  for (auto it = c.rbegin(); it != c.rend(); ++it) {
    if (it->second > 0.0f) return it->first;
  }
  return c.front().first;
}

// Logits of one row: uniform, or few distinct values (many ties), or with NaN / inf / -0 sprinkled in.
std::vector<float> make_logits(int32_t n, int kind, std::mt19937& rng) {
  std::vector<float> row = cuda_test::random_floats(static_cast<size_t>(n), rng, -6.0f, 6.0f);
  if (kind == 1) {
    for (float& x : row) x = std::round(x * 0.75f) / 0.75f;
  } else if (kind == 2) {
    std::uniform_int_distribution<int32_t> pick(0, n - 1);
    for (int j = 0; j < std::max(1, n / 20); ++j) {
      const float specials[] = {NAN, -INFINITY, INFINITY, -0.0f, 0.0f};
      row[static_cast<size_t>(pick(rng))] = specials[j % 5];
    }
  }
  return row;
}

std::vector<DeviceSamplingParams> parameter_sets(int32_t n) {
  return {
      {0.0f, 0, 1.0f, 0.0f},     {1.0f, 0, 1.0f, 0.0f},     {0.7f, 1, 1.0f, 0.0f},    {0.7f, 5, 1.0f, 0.0f},
      {1.0f, 40, 1.0f, 0.0f},    {1.0f, n - 1, 1.0f, 0.0f}, {1.0f, n, 1.0f, 0.0f},    {1.0f, 0, 0.1f, 0.0f},
      {0.9f, 0, 0.5f, 0.0f},     {1.0f, 0, 0.9f, 0.0f},     {1.5f, 0, 0.999f, 0.0f},  {1.0f, 0, 1.0f, 0.05f},
      {0.8f, 0, 1.0f, 0.2f},     {1.0f, 0, 1.0f, 1.0f},     {1.3f, 50, 0.8f, 0.1f},   {0.6f, 0, 0.7f, 0.02f},
      {2.0f, 7, 0.95f, 0.0f},
  };
}

TEST(CudaSampleTokens, MatchesTheCpuRuleExactly) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(80);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int64_t draws = 0, near_ties = 0;
  std::vector<int64_t> sizes(std::begin(cuda_test::kOddSizes), std::end(cuda_test::kOddSizes));
  sizes.push_back(1000);
  sizes.push_back(49152);
  for (int64_t n64 : sizes) {
    const int32_t n = static_cast<int32_t>(n64);
    const int32_t rows_per_set = n > 1000 ? 12 : 48;
    for (const DeviceSamplingParams& prm : parameter_sets(n)) {
      SCOPED_TRACE(testing::Message() << "vocab " << n << " T=" << prm.temperature << " top_k=" << prm.top_k
                                      << " top_p=" << prm.top_p << " min_p=" << prm.min_p);
      std::vector<float> logits;
      std::vector<DeviceSamplingParams> params(static_cast<size_t>(rows_per_set), prm);
      std::vector<double> uniforms;
      for (int32_t r = 0; r < rows_per_set; ++r) {
        const std::vector<float> row = make_logits(n, r % 3, rng);
        logits.insert(logits.end(), row.begin(), row.end());
        // The edges of [0, 1) as well as random numbers.
        uniforms.push_back(r == 0 ? 0.0 : r == 1 ? std::nextafter(1.0, 0.0) : uniform(rng));
      }
      DeviceBuffer<float> dlogits(logits), dws(cuda::sample_tokens_workspace_floats(rows_per_set, n));
      DeviceBuffer<DeviceSamplingParams> dparams(params);
      DeviceBuffer<double> du(uniforms);
      DeviceBuffer<int32_t> dids(static_cast<size_t>(rows_per_set));
      CUDA_OK(dids.poison());
      CUDA_OK(dws.poison());
      LAUNCH_OK(cuda::sample_tokens(dlogits.get(), rows_per_set, n, dparams.get(), du.get(), dws.get(), dws.size(),
                                    dids.get(), nullptr));
      const std::vector<int32_t> ids = dids.download();
      for (int32_t r = 0; r < rows_per_set; ++r) {
        const float* row = &logits[static_cast<size_t>(r) * n];
        const int32_t want = host_sample(row, n, prm, uniforms[static_cast<size_t>(r)]);
        ++draws;
        if (ids[static_cast<size_t>(r)] == want) continue;
        std::set<int32_t> near;  // the answers within a near-tie
        for (double mass_scale : {1.0 - 1e-6, 1.0, 1.0 + 1e-6}) {
          for (double target_scale : {1.0 - 1e-6, 1.0, 1.0 + 1e-6}) {
            near.insert(host_sample(row, n, prm, uniforms[static_cast<size_t>(r)], mass_scale, target_scale));
          }
        }
        EXPECT_TRUE(near.size() > 1 && near.count(ids[static_cast<size_t>(r)]) == 1)
            << "row " << r << " u=" << uniforms[static_cast<size_t>(r)] << ": device " << ids[static_cast<size_t>(r)]
            << ", host " << want;
        ++near_ties;
      }
    }
  }
  EXPECT_LE(near_ties * 100, draws) << near_ties << " near-ties in " << draws << " draws";
  std::printf("sample_tokens: %lld draws, %lld accepted near-ties\n", static_cast<long long>(draws),
              static_cast<long long>(near_ties));
}

}  // namespace
}  // namespace kvscope
