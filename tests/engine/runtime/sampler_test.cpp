// Sampler tests: greedy and ties, seeding, hand-made top-p / min-p / penalty
// cases, the fast distribution against a full-sort reference at vocab 262144,
// and empirical draw frequencies against probability_distribution (chi-square,
// seeded, so deterministic). Run: ctest -L unit -R sampler
#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

namespace kvscope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

SamplingParams plain(float temperature = 1.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 1;
  return p;
}

std::map<int32_t, float> as_map(const std::vector<TokenProb>& d) {
  std::map<int32_t, float> m;
  for (const auto& [id, p] : d) m[id] += p;
  return m;
}

std::vector<int32_t> ids_of(const std::vector<TokenProb>& d) {
  std::vector<int32_t> ids;
  for (const auto& e : d) ids.push_back(e.first);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// log of probabilities, so the plain softmax gives them back.
std::vector<float> logits_of(std::vector<double> probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(p > 0 ? float(std::log(p)) : -kInf);
  return l;
}

// The pipeline of sampler.h written the obvious way: full sort, no shortcuts.
// Weights are computed in float exactly as the sampler does, so cut decisions
// agree bit for bit when logits are spaced well apart.
std::map<int32_t, double> reference_distribution(const std::vector<float>& logits,
                                                 const SamplingParams& p,
                                                 const std::vector<int32_t>& recent) {
  std::vector<float> l = logits;
  const size_t n_window = p.repeat_last_n < 0 ? recent.size()
                                              : std::min(recent.size(), size_t(p.repeat_last_n));
  std::map<int32_t, int> counts;
  for (size_t i = recent.size() - n_window; i < recent.size(); ++i) counts[recent[i]]++;
  for (const auto& [id, c] : counts) {
    float& x = l[id];
    x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
    x -= float(c) * p.frequency_penalty + p.presence_penalty;
  }
  std::vector<int32_t> order(l.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return l[a] > l[b] || (l[a] == l[b] && a < b);
  });
  if (p.temperature == 0) return {{order[0], 1.0}};
  if (p.top_k > 0 && size_t(p.top_k) < order.size()) order.resize(p.top_k);
  const float max = l[order[0]];
  std::vector<float> w;
  double z = 0;
  for (int32_t id : order) {
    w.push_back(std::exp((l[id] - max) / p.temperature));
    z += w.back();
  }
  size_t keep = order.size();
  if (p.top_p < 1) {
    double cum = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      cum += w[i];
      if (cum >= double(p.top_p) * z) {
        keep = i + 1;
        break;
      }
    }
  }
  std::map<int32_t, double> out;
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) {
    if (w[i] >= p.min_p) {
      out[order[i]] = w[i];
      sum += w[i];
    }
  }
  for (auto& [id, v] : out) v /= sum;
  return out;
}

// Logits on a 1/64 grid in [-12, 12]: many exact ties (to test tie rules), and
// distinct logits are far enough apart that their weights never tie in float.
std::vector<float> grid_logits(int32_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> l(n);
  for (float& x : l) x = std::round(std::clamp(normal(rng), -12.0f, 12.0f) * 64.0f) / 64.0f;
  return l;
}

TEST(SamplerTest, GreedyIsArgmaxAndTiesGoToLowestId) {
  const std::vector<float> logits = {1.0f, 5.0f, 3.0f, 5.0f, -2.0f};
  Sampler s(plain(0.0f));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.sample(logits.data(), 5, {}), 1);
  const auto d = probability_distribution(logits.data(), 5, plain(0.0f), {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], TokenProb(1, 1.0f));
  const std::vector<float> all_equal(7, 0.25f);
  EXPECT_EQ(s.sample(all_equal.data(), 7, {}), 0);
}

TEST(SamplerTest, TopKOneEqualsGreedy) {
  const auto logits = grid_logits(5000, 7);  // grid: the maximum is tied
  SamplingParams p = plain(1.5f);
  p.top_k = 1;
  Sampler greedy(plain(0.0f));
  Sampler top1(p);
  const int32_t want = greedy.sample(logits.data(), 5000, {});
  EXPECT_EQ(want, int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(top1.sample(logits.data(), 5000, {}), want);
}

std::vector<int32_t> draws(uint64_t seed, const std::vector<float>& logits, int num) {
  SamplingParams p;  // the defaults: top-k 40, top-p 0.95, min-p 0.05
  p.temperature = 1.5f;
  p.seed = seed;
  Sampler s(p);
  std::vector<int32_t> out;
  for (int i = 0; i < num; ++i) out.push_back(s.sample(logits.data(), int32_t(logits.size()), out));
  return out;
}

TEST(SamplerTest, SameSeedSameDrawsDifferentSeedDifferentDraws) {
  const auto logits = grid_logits(1000, 3);
  const auto a = draws(42, logits, 2000);
  EXPECT_EQ(a, draws(42, logits, 2000));
  EXPECT_NE(a, draws(43, logits, 2000));
  EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 5u);  // it really is random
}

TEST(SamplerTest, SeedZeroPicksAReportedReproducibleSeed) {
  const auto logits = grid_logits(1000, 4);
  SamplingParams p;
  p.seed = 0;
  Sampler s(p);
  ASSERT_NE(s.seed(), 0u);
  std::vector<int32_t> got;
  for (int i = 0; i < 500; ++i) got.push_back(s.sample(logits.data(), 1000, {}));
  p.seed = s.seed();
  Sampler again(p);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(again.sample(logits.data(), 1000, {}), got[i]);
}

TEST(SamplerTest, TopPKeepsSmallestPrefixReachingTheMass) {
  // p = 0.5, 0.25, 0.125, 0.125, then four impossible tokens. top_k 6 < 8
  // takes the top-k path; top_k 0 the incremental one. Both must agree.
  const auto logits = logits_of({0.5, 0.25, 0.125, 0.125, 0, 0, 0, 0});
  for (int32_t top_k : {0, 6}) {
    SCOPED_TRACE(top_k);
    SamplingParams p = plain();
    p.top_k = top_k;
    p.top_p = 0.3f;
    EXPECT_EQ(ids_of(probability_distribution(logits.data(), 8, p, {})),
              (std::vector<int32_t>{0}));
    p.top_p = 0.7f;
    auto d = as_map(probability_distribution(logits.data(), 8, p, {}));
    ASSERT_EQ(d.size(), 2u);
    EXPECT_NEAR(d[0], 2.0 / 3.0, 1e-6);
    EXPECT_NEAR(d[1], 1.0 / 3.0, 1e-6);
    p.top_p = 0.8f;  // 0.75 is short; the tie at 0.125 goes to the lower id
    d = as_map(probability_distribution(logits.data(), 8, p, {}));
    ASSERT_EQ(d.size(), 3u);
    EXPECT_NEAR(d[2], 0.125 / 0.875, 1e-6);
    p.top_p = 1.0f;
    d = as_map(probability_distribution(logits.data(), 8, p, {}));
    EXPECT_NEAR(d[3], 0.125, 1e-6);
    EXPECT_EQ(d.count(4) ? d[4] : 0.0f, 0.0f);
  }
}

TEST(SamplerTest, TopPSeesTheTemperature) {
  // At T = 0.5 the probabilities square: 0.727, 0.182, 0.045, 0.045.
  const auto logits = logits_of({0.5, 0.25, 0.125, 0.125});
  SamplingParams p = plain(0.5f);
  p.top_p = 0.7f;
  EXPECT_EQ(ids_of(probability_distribution(logits.data(), 4, p, {})), (std::vector<int32_t>{0}));
  p.temperature = 1.0f;
  EXPECT_EQ(ids_of(probability_distribution(logits.data(), 4, p, {})),
            (std::vector<int32_t>{0, 1}));
}

TEST(SamplerTest, MinPDropsTokensBelowFractionOfTheBest) {
  const auto logits = logits_of({0.125, 0.5, 0.25, 0.125});  // best is id 1
  for (int32_t top_k : {0, 3}) {
    SCOPED_TRACE(top_k);
    SamplingParams p = plain();
    p.top_k = top_k;
    p.min_p = 0.6f;  // keeps p >= 0.3
    EXPECT_EQ(ids_of(probability_distribution(logits.data(), 4, p, {})),
              (std::vector<int32_t>{1}));
    p.min_p = 0.3f;  // keeps p >= 0.15
    auto d = as_map(probability_distribution(logits.data(), 4, p, {}));
    ASSERT_EQ(d.size(), 2u);
    EXPECT_NEAR(d[1], 2.0 / 3.0, 1e-6);
    EXPECT_NEAR(d[2], 1.0 / 3.0, 1e-6);
    p.min_p = 0.2f;  // keeps p >= 0.1: all that top-k left
    EXPECT_EQ(probability_distribution(logits.data(), 4, p, {}).size(), top_k ? 3u : 4u);
  }
  SamplingParams p = plain();
  p.min_p = 1.0f;  // only the best survives, even at the extreme
  EXPECT_EQ(ids_of(probability_distribution(logits.data(), 4, p, {})), (std::vector<int32_t>{1}));
}

TEST(SamplerTest, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  const std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.0f};
  SamplingParams p = plain();
  p.repetition_penalty = 2.0f;
  const std::vector<int32_t> recent = {0, 1, 0};  // counts don't matter for this penalty
  const auto d = as_map(probability_distribution(logits.data(), 4, p, recent));
  const std::vector<double> want_logits = {1.0, -4.0, 1.0, 0.0};
  double z = 0;
  for (double l : want_logits) z += std::exp(l);
  for (int32_t i = 0; i < 4; ++i) EXPECT_NEAR(d.at(i), std::exp(want_logits[i]) / z, 1e-6) << i;

  // Greedy sees the penalty: 2.0 / 2 = 1.0 < 1.5.
  const std::vector<float> two = {2.0f, 1.5f};
  SamplingParams g = plain(0.0f);
  g.repetition_penalty = 2.0f;
  EXPECT_EQ(Sampler(g).sample(two.data(), 2, std::vector<int32_t>{0}), 1);
  EXPECT_EQ(Sampler(g).sample(two.data(), 2, std::vector<int32_t>{1}), 0);
}

TEST(SamplerTest, PenaltiesOnlyReadTheLastWindowAndCountForFrequency) {
  const std::vector<float> logits = {3.0f, 3.0f, 3.0f};
  SamplingParams p = plain(0.0f);
  p.repeat_last_n = 2;
  p.repetition_penalty = 1.5f;
  // Token 0 is outside the window of two, so it is unpenalised and wins.
  EXPECT_EQ(Sampler(p).sample(logits.data(), 3, std::vector<int32_t>{1, 0, 1, 2}), 0);
  p.repeat_last_n = -1;  // all: 0, 1, 2 are all penalised alike -> lowest id
  EXPECT_EQ(Sampler(p).sample(logits.data(), 3, std::vector<int32_t>{0, 1, 2}), 0);
  p.repeat_last_n = 0;   // off
  EXPECT_EQ(Sampler(p).sample(logits.data(), 3, std::vector<int32_t>{0}), 0);

  SamplingParams f = plain();
  f.frequency_penalty = 0.5f;
  f.presence_penalty = 0.25f;
  const std::vector<int32_t> recent = {1, 1, 1, 2, 99, -4};  // out-of-vocab ids are ignored
  const auto d = as_map(probability_distribution(logits.data(), 3, f, recent));
  const std::vector<double> want = {3.0, 3.0 - 1.5 - 0.25, 3.0 - 0.5 - 0.25};
  double z = 0;
  for (double l : want) z += std::exp(l);
  for (int32_t i = 0; i < 3; ++i) EXPECT_NEAR(d.at(i), std::exp(want[i]) / z, 1e-6) << i;
}

TEST(SamplerTest, MatchesFullSortReferenceAtLargeVocab) {
  constexpr int32_t kVocab = 262144;
  const auto logits = grid_logits(kVocab, 11);
  std::vector<int32_t> recent;
  for (int32_t i = 0; i < 100; ++i) recent.push_back((i * 7919) % kVocab);
  struct Case { float t; int32_t k; float top_p; float min_p; float rep; };
  const Case cases[] = {
      {0.8f, 40, 0.95f, 0.05f, 1.1f},    // defaults with a penalty
      {1.0f, 0, 0.9f, 0.0f, 1.0f},       // incremental top-p over the whole vocab
      {1.3f, 0, 0.5f, 0.0001f, 1.0f},    // min-p prefilter, then top-p
      {1.0f, 5000, 0.99f, 0.0f, 1.3f},   // top-k by nth_element
      {0.7f, 0, 1.0f, 0.001f, 1.0f},     // min-p alone
      {2.0f, 0, 1.0f, 0.0f, 1.0f},       // no cut at all
      {0.0f, 0, 1.0f, 0.0f, 1.2f},       // greedy
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "T=" << c.t << " k=" << c.k << " top_p=" << c.top_p
                                      << " min_p=" << c.min_p);
    SamplingParams p = plain(c.t);
    p.top_k = c.k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.repetition_penalty = c.rep;
    const auto want = reference_distribution(logits, p, recent);
    const auto got = as_map(probability_distribution(logits.data(), kVocab, p, recent));
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [id, prob] : want) {
      ASSERT_TRUE(got.count(id)) << id;
      EXPECT_NEAR(got.at(id), prob, 1e-6 + 1e-5 * prob) << id;
    }
  }
}

// Chi-square of `draws` sampler draws against its own probability_distribution,
// optionally against a different distribution `against`.
double chi_square(const std::vector<float>& logits, const SamplingParams& p, int num_draws,
                  size_t* num_categories, const std::map<int32_t, float>* against = nullptr) {
  const auto dist = as_map(probability_distribution(logits.data(), int32_t(logits.size()), p, {}));
  const auto& expect = against ? *against : dist;
  Sampler s(p);
  std::map<int32_t, int> counts;
  for (int i = 0; i < num_draws; ++i) {
    const int32_t id = s.sample(logits.data(), int32_t(logits.size()), {});
    EXPECT_TRUE(dist.count(id)) << "drew " << id << ", which has no probability";
    counts[id]++;
  }
  double chi2 = 0;
  for (const auto& [id, prob] : expect) {
    const double e = prob * num_draws;
    const double o = counts.count(id) ? counts[id] : 0;
    chi2 += (o - e) * (o - e) / e;
  }
  *num_categories = expect.size();
  return chi2;
}

TEST(SamplerTest, DrawFrequenciesMatchTheDistribution) {
  // Logits spread so every kept token expects hundreds of draws.
  std::vector<float> logits(64);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(float(i) * 1.7f) * 1.5f;
  struct Case { float t; int32_t k; float top_p; float min_p; };
  const Case cases[] = {{1.0f, 0, 1.0f, 0.0f}, {0.8f, 20, 0.95f, 0.05f}, {1.2f, 0, 0.8f, 0.0f},
                        {0.9f, 0, 0.9f, 0.1f}};
  uint64_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "T=" << c.t << " k=" << c.k << " top_p=" << c.top_p
                                      << " min_p=" << c.min_p);
    SamplingParams p = plain(c.t);
    p.top_k = c.k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.seed = ++seed;
    size_t k = 0;
    const double chi2 = chi_square(logits, p, 200000, &k);
    // df = k - 1; mean df, sd sqrt(2 df). Six sd is far beyond any seed's luck
    // yet still catches one percentage point moved between two tokens (below).
    const double df = double(k - 1);
    EXPECT_GT(k, 10u);
    EXPECT_LT(chi2, df + 6.0 * std::sqrt(2.0 * df)) << "categories " << k;
  }

  // The bound has teeth: move 0.01 of probability between two tokens and it fails.
  SamplingParams p = plain(1.0f);
  p.seed = 5;
  auto skewed = as_map(probability_distribution(logits.data(), 64, p, {}));
  skewed.begin()->second += 0.01f;
  std::next(skewed.begin())->second -= 0.01f;
  size_t k = 0;
  const double chi2 = chi_square(logits, p, 200000, &k, &skewed);
  EXPECT_GT(chi2, double(k - 1) + 6.0 * std::sqrt(2.0 * double(k - 1)));
}

// Greedy reads the row in place (vectorised, no copy) unless a penalty needs
// a copy: both must be the plain rule, the first id holding the maximum of
// the sanitised values, at every size (vector body and tail) and with NaN,
// infinities, FLT_MAX and ties anywhere.
TEST(SamplerTest, GreedyIsThePlainArgmaxAtOddSizesWithNonFiniteValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float fmax = std::numeric_limits<float>::max();
  std::mt19937 rng(12);
  auto plain_argmax = [](const std::vector<float>& v) {
    auto sane = [](float x) { return std::isnan(x) ? -std::numeric_limits<float>::max()
                                                   : std::clamp(x, -std::numeric_limits<float>::max(),
                                                                std::numeric_limits<float>::max()); };
    int32_t best = 0;
    for (int32_t i = 1; i < static_cast<int32_t>(v.size()); ++i)
      if (sane(v[static_cast<size_t>(i)]) > sane(v[static_cast<size_t>(best)])) best = i;
    return best;
  };
  SamplingParams penalised = plain(0.0f);
  penalised.repetition_penalty = 1.5f;
  int num_checked = 0;
  for (int32_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 1001, 262147}) {
    for (int trial = 0; trial < 12; ++trial) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& x : v) x = static_cast<float>(static_cast<int>(rng() % 7)) - 3.0f;  // many ties
      const int kind = trial % 6;
      for (int k = 0; k < 3; ++k) {
        const size_t at = rng() % static_cast<size_t>(n);
        v[at] = kind == 0 ? nan : kind == 1 ? kInf : kind == 2 ? -kInf : kind == 3 ? fmax : kind == 4 ? 9.0f : v[at];
      }
      if (trial == 11) std::fill(v.begin(), v.end(), nan);
      const int32_t want = plain_argmax(v);
      EXPECT_EQ(Sampler(plain(0.0f)).sample(v.data(), n, {}), want) << "n " << n << " trial " << trial;
      // A penalty on a token outside the row's maximum keeps the argmax, through the copying path.
      const std::vector<int32_t> recent = {want == 0 ? n - 1 : 0};
      if (n > 1 && v[static_cast<size_t>(recent[0])] < 0.0f && !std::isnan(v[static_cast<size_t>(recent[0])])) {
        EXPECT_EQ(Sampler(penalised).sample(v.data(), n, recent), want) << "n " << n << " trial " << trial;
      }
      ++num_checked;
    }
  }
  EXPECT_EQ(num_checked, 11 * 12);
}

TEST(SamplerTest, NonFiniteLogitsDoNotBreakSampling) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> mixed = {nan, 1.0f, -kInf, kInf, 2.0f};
  Sampler s(plain());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(mixed.data(), 5, {}), 3);
  const std::vector<float> masked(6, -kInf);
  for (int i = 0; i < 20; ++i) {
    const int32_t id = s.sample(masked.data(), 6, {});
    EXPECT_TRUE(id >= 0 && id < 6);
  }
  EXPECT_EQ(Sampler(plain(0.0f)).sample(mixed.data(), 5, {}), 3);
}

TEST(SamplerTest, LogSoftmaxAndTopN) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  for (int32_t i = 0; i < 4; ++i)
    EXPECT_NEAR(log_softmax_of(logits.data(), 4, i), logits[i] - std::log(z), 1e-6);
  const auto top = top_n(logits.data(), 4, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);
  EXPECT_EQ(top[1].first, 3);
  EXPECT_EQ(top[2].first, 0);
  EXPECT_NEAR(top[2].second, log_softmax_of(logits.data(), 4, 0), 1e-6);
  EXPECT_EQ(top_n(logits.data(), 4, 10).size(), 4u);
  EXPECT_TRUE(top_n(logits.data(), 4, 0).empty());
}

TEST(SamplingParamsTest, ValidateNamesTheBadField) {
  EXPECT_TRUE(SamplingParams{}.validate().ok());
  auto message = [](auto mutate) {
    SamplingParams p;
    mutate(p);
    const Status s = p.validate();
    return s.ok() ? std::string("ok") : s.error();
  };
  EXPECT_EQ(message([](SamplingParams& p) { p.temperature = -1.0f; }),
            "temperature must be a finite number >= 0 (0 = greedy), got -1");
  EXPECT_EQ(message([](SamplingParams& p) { p.top_p = 1.5f; }),
            "top_p must be in (0, 1] (1 = off), got 1.5");
  EXPECT_EQ(message([](SamplingParams& p) { p.top_p = 0.0f; }),
            "top_p must be in (0, 1] (1 = off), got 0");
  EXPECT_EQ(message([](SamplingParams& p) { p.min_p = -0.1f; }),
            "min_p must be in [0, 1] (0 = off), got -0.1");
  EXPECT_EQ(message([](SamplingParams& p) { p.top_k = -3; }),
            "top_k must be >= 0 (0 = off), got -3");
  EXPECT_EQ(message([](SamplingParams& p) { p.repetition_penalty = 0.0f; }),
            "repetition_penalty must be a finite number > 0 (1 = off), got 0");
  EXPECT_EQ(message([](SamplingParams& p) { p.max_tokens = -1; }), "max_tokens must be >= 0 (0: run the prompt only), got -1");
  EXPECT_EQ(message([](SamplingParams& p) { p.repeat_last_n = -2; }),
            "repeat_last_n must be >= -1 (0 = off, -1 = all recent tokens), got -2");
  EXPECT_EQ(message([](SamplingParams& p) { p.stop = {"</s>", ""}; }),
            "stop[1] is empty; an empty stop string would end every generation at once");
  EXPECT_NE(message([](SamplingParams& p) { p.temperature = std::nanf(""); }), "ok");
  EXPECT_NE(message([](SamplingParams& p) { p.presence_penalty = kInf; }), "ok");
  EXPECT_EQ(message([](SamplingParams& p) {
              p.temperature = 0.0f;
              p.top_k = 0;
              p.top_p = 1.0f;
              p.min_p = 0.0f;
              p.repeat_last_n = -1;
            }),
            "ok");

  SamplingParams bad;
  bad.top_p = 2.0f;
  const auto sampler = Sampler::create(bad);
  ASSERT_FALSE(sampler.ok());
  EXPECT_NE(sampler.error().find("top_p"), std::string::npos);
  EXPECT_TRUE(Sampler::create(SamplingParams{}).ok());
}

}  // namespace
}  // namespace kvscope
