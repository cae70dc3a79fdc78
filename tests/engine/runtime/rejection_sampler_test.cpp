// Speculative decoding's acceptance rule (spec/rejection_sampler.h), label
// `unit`: on synthetic distributions, with 200,000 draws per case, the
// tokens it emits are distributed as the target p, whatever the draft: total
// variation distance within the sampling error. Also the acceptance rate is
// p(x) (one-hot q) or sum min(p, q) (any q), and a wrong rule fails the same
// test (the bound is tight enough to catch it).
//
// The bound: with N draws, the frequency of token i has standard error
// s_i = sqrt(p_i (1 - p_i) / N). If every frequency is within z = 4.5 of its
// s_i (each fails with probability < 7e-6, so all of up to 50 tokens hold
// with probability > 0.9996; the seeds are fixed, so the test is
// deterministic anyway), the distance 1/2 sum |f_i - p_i| is at most
// 1/2 sum z s_i. Both are checked: each token within z s_i (+ 1/N for
// rounding), and the distance within the sum.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "spec/rejection_sampler.h"

namespace kvscope {
namespace {

constexpr int64_t kDraws = 200000;
constexpr double kZ = 4.5;

using Dist = std::vector<TokenProb>;

double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double prob(const Dist& d, int32_t id) {
  double p = 0.0;
  for (const TokenProb& t : d) p += t.first == id ? t.second : 0.0;
  return p;
}

// Checks that `counts` (over kDraws) follow `target`; returns the distance.
double expect_distributed_as(const std::map<int32_t, int64_t>& counts, const std::map<int32_t, double>& target,
                             int64_t n) {
  double distance = 0.0, bound = 0.0;
  std::map<int32_t, double> all = target;
  for (const auto& [id, c] : counts) all.emplace(id, 0.0);
  for (const auto& [id, p] : all) {
    const auto it = counts.find(id);
    const double f = it == counts.end() ? 0.0 : static_cast<double>(it->second) / static_cast<double>(n);
    const double se = std::sqrt(p * (1.0 - p) / static_cast<double>(n));
    EXPECT_LE(std::fabs(f - p), kZ * se + 1.0 / static_cast<double>(n)) << "token " << id << ": " << f << " vs " << p;
    distance += 0.5 * std::fabs(f - p);
    bound += 0.5 * kZ * se;
  }
  EXPECT_LE(distance, bound + 0.5 * static_cast<double>(all.size()) / static_cast<double>(n));
  return distance;
}

std::map<int32_t, double> as_map(const Dist& d) {
  std::map<int32_t, double> m;
  double total = 0.0;
  for (const TokenProb& t : d) total += t.second;
  for (const TokenProb& t : d) m[t.first] += t.second / total;
  return m;
}

Dist zipf(int32_t n) {
  Dist d;
  double total = 0.0;
  for (int32_t i = 1; i <= n; ++i) total += 1.0 / i;
  for (int32_t i = 1; i <= n; ++i) d.emplace_back(100 + i, static_cast<float>(1.0 / i / total));
  return d;
}

struct OneHotCase {
  const char* name;
  Dist p;
  int32_t draft;
};

std::vector<OneHotCase> one_hot_cases() {
  return {
      {"three tokens, middle draft", {{0, 0.5f}, {1, 0.3f}, {2, 0.2f}}, 1},
      {"three tokens, likeliest draft", {{0, 0.5f}, {1, 0.3f}, {2, 0.2f}}, 0},
      {"draft not in p (p(x) = 0)", {{0, 0.6f}, {1, 0.4f}}, 7},
      {"draft listed with p(x) = 0", {{0, 0.0f}, {1, 0.7f}, {2, 0.3f}}, 0},
      {"p(x) = 1 (greedy)", {{3, 1.0f}}, 3},
      {"greedy, draft wrong", {{3, 1.0f}}, 4},
      {"50-token Zipf, rare draft", zipf(50), 140},
      {"50-token Zipf, likeliest draft", zipf(50), 101},
  };
}

// One-hot q: P(accept) = p(x); emitted tokens ~ p; after a rejection ~ p
// without x, renormalised.
TEST(RejectionSampler, DeterministicDraftKeepsTheTargetDistribution) {
  std::mt19937_64 rng(2024);
  for (const OneHotCase& c : one_hot_cases()) {
    SCOPED_TRACE(c.name);
    std::map<int32_t, int64_t> emitted, after_rejection;
    int64_t accepted = 0;
    for (int64_t i = 0; i < kDraws; ++i) {
      const DraftVerdict v = verify_deterministic_draft(c.p, c.draft, uniform(rng));
      ++emitted[v.token];
      EXPECT_EQ(v.accepted, v.token == c.draft);
      if (v.accepted) {
        ++accepted;
      } else {
        ++after_rejection[v.token];
      }
    }
    const std::map<int32_t, double> p = as_map(c.p);
    expect_distributed_as(emitted, p, kDraws);
    const double p_x = prob(c.p, c.draft);
    expect_distributed_as({{1, accepted}, {0, kDraws - accepted}}, {{1, p_x}, {0, 1.0 - p_x}}, kDraws);
    if (p_x < 1.0) {  // the residual max(0, p - q): p with x removed
      std::map<int32_t, double> residual;
      for (const auto& [id, q] : p) {
        if (id != c.draft) residual[id] = q / (1.0 - p_x);
      }
      expect_distributed_as(after_rejection, residual, kDraws - accepted);
    }
  }
}

// A rule that resamples from p itself after a rejection (x included) gives x
// too much mass: the same bound catches it, so the test above can fail.
TEST(RejectionSampler, AWrongRuleFailsTheSameBound) {
  std::mt19937_64 rng(7);
  const Dist p = {{0, 0.5f}, {1, 0.3f}, {2, 0.2f}};
  const int32_t draft = 1;
  std::map<int32_t, int64_t> emitted;
  for (int64_t i = 0; i < kDraws; ++i) {
    const bool accept = uniform(rng) < 0.3;
    ++emitted[accept ? draft : draw_token(p, uniform(rng))];
  }
  double distance = 0.0, bound = 0.0;
  for (const auto& [id, q] : as_map(p)) {
    distance += 0.5 * std::fabs(static_cast<double>(emitted[id]) / kDraws - q);
    bound += 0.5 * kZ * std::sqrt(q * (1.0 - q) / kDraws);
  }
  EXPECT_GT(distance, 10 * bound);  // P(1) = 0.3 + 0.7 * 0.3 = 0.51 instead of 0.3
}

// Any proposer: draft ~ q, accept with min(1, p/q), else draw from
// normalised max(0, p - q). Emitted tokens ~ p; P(accept) = sum min(p, q).
TEST(RejectionSampler, DraftFromADistributionKeepsTheTargetDistribution) {
  struct Case {
    const char* name;
    Dist p, q;
  };
  const std::vector<Case> cases = {
      {"q == p", {{0, 0.5f}, {1, 0.3f}, {2, 0.2f}}, {{0, 0.5f}, {1, 0.3f}, {2, 0.2f}}},
      {"q uniform, p skewed", {{0, 0.8f}, {1, 0.15f}, {2, 0.05f}}, {{0, 1 / 3.0f}, {1, 1 / 3.0f}, {2, 1 / 3.0f}}},
      {"q on tokens p lacks", {{0, 0.6f}, {1, 0.4f}}, {{1, 0.2f}, {5, 0.5f}, {6, 0.3f}}},
      {"q one-hot", {{0, 0.6f}, {1, 0.4f}}, {{1, 1.0f}}},
      {"p one-hot (greedy), q spread", {{2, 1.0f}}, {{0, 0.25f}, {1, 0.25f}, {2, 0.5f}}},
      {"Zipf p, reversed q", zipf(20), [] {
         Dist q = zipf(20);
         for (size_t i = 0; i < q.size(); ++i) q[i].first = zipf(20)[q.size() - 1 - i].first;
         return q;
       }()},
  };
  std::mt19937_64 rng(99);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::map<int32_t, int64_t> emitted;
    int64_t accepted = 0;
    for (int64_t i = 0; i < kDraws; ++i) {
      const int32_t draft = draw_token(c.q, uniform(rng));
      const double u_accept = uniform(rng), u_residual = uniform(rng);
      const DraftVerdict v = verify_draft(c.p, c.q, draft, u_accept, u_residual);
      ++emitted[v.token];
      accepted += v.accepted;
      if (v.accepted) {
        EXPECT_EQ(v.token, draft);
      }
    }
    expect_distributed_as(emitted, as_map(c.p), kDraws);
    double expected_acceptance = 0.0;
    for (const auto& [id, p] : as_map(c.p)) expected_acceptance += std::min(p, as_map(c.q)[id]);
    expect_distributed_as({{1, accepted}, {0, kDraws - accepted}},
                          {{1, expected_acceptance}, {0, 1.0 - expected_acceptance}}, kDraws);
  }
}

// The one-hot rule is the general rule with q one-hot, draw for draw in law:
// the two acceptance rates agree.
TEST(RejectionSampler, OneHotRuleIsTheGeneralRuleWithOneHotQ) {
  const Dist p = {{0, 0.45f}, {1, 0.35f}, {2, 0.2f}};
  const Dist q = {{2, 1.0f}};
  std::mt19937_64 rng(5);
  int64_t general = 0, one_hot = 0;
  for (int64_t i = 0; i < kDraws; ++i) {
    general += verify_draft(p, q, 2, uniform(rng), uniform(rng)).accepted;
    one_hot += verify_deterministic_draft(p, 2, uniform(rng)).accepted;
  }
  const double se = std::sqrt(0.2 * 0.8 / kDraws);
  EXPECT_NEAR(static_cast<double>(general) / kDraws, 0.2, kZ * se);
  EXPECT_NEAR(static_cast<double>(one_hot) / kDraws, 0.2, kZ * se);
}

}  // namespace
}  // namespace kvscope
