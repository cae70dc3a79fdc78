#include "spec/rejection_sampler.h"

#include <algorithm>
#include <cassert>
#include <unordered_map>
#include <vector>

namespace kvscope {
namespace {

double probability_of(std::span<const TokenProb> d, int32_t id) {
  double p = 0.0;
  for (const TokenProb& t : d) {
    if (t.first == id) p += t.second;
  }
  return p;
}

}  // namespace

DraftVerdict verify_deterministic_draft(std::span<const TokenProb> p, int32_t draft, double u) {
  assert(!p.empty() && "verify_deterministic_draft: empty distribution");
  const int32_t token = draw_token(p, u);
  return {token, token == draft};
}

DraftVerdict verify_draft(std::span<const TokenProb> p, std::span<const TokenProb> q, int32_t draft,
                          double u_accept, double u_residual) {
  assert(!p.empty() && "verify_draft: empty target distribution");
  const double q_x = probability_of(q, draft);
  assert(q_x > 0.0 && "verify_draft: the draft must have q > 0");
  const double p_x = probability_of(p, draft);
  if (u_accept < std::min(1.0, p_x / q_x)) return {draft, true};

  std::unordered_map<int32_t, double> q_of;
  for (const TokenProb& t : q) q_of[t.first] += t.second;
  std::vector<TokenProb> residual;
  residual.reserve(p.size());
  for (const TokenProb& t : p) {
    const auto it = q_of.find(t.first);
    const double r = static_cast<double>(t.second) - (it == q_of.end() ? 0.0 : it->second);
    residual.emplace_back(t.first, static_cast<float>(std::max(0.0, r)));
  }
  const bool any = std::any_of(residual.begin(), residual.end(), [](const TokenProb& t) { return t.second > 0.0f; });
  const int32_t token = draw_token(any ? std::span<const TokenProb>(residual) : p, u_residual);
  return {token, token == draft};
}

}  // namespace kvscope
