#include "spec/ngram_proposer.h"

#include <algorithm>
#include <cassert>

namespace kvscope {

NgramProposer::NgramProposer(int32_t min_match, int32_t max_match) : min_match_(min_match), max_match_(max_match) {
  assert(min_match >= 1 && min_match <= max_match && "NgramProposer: need 1 <= min_match <= max_match");
}

std::vector<int32_t> NgramProposer::propose(std::span<const int32_t> tokens, int32_t k) {
  assert(k >= 1 && "propose: k >= 1");
  const int32_t len = static_cast<int32_t>(tokens.size());
  // An occurrence needs at least one token before the suffix itself.
  for (int32_t n = std::min(max_match_, len - 1); n >= min_match_; --n) {
    const std::span<const int32_t> suffix = tokens.last(static_cast<size_t>(n));
    int32_t earliest = -1;  // start of the earliest occurrence seen
    // Latest start first: the suffix itself starts at len - n, so every start
    // scanned here leaves at least one token after the occurrence.
    for (int32_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      earliest = start;
      if (len - (start + n) >= k) break;  // the most recent one followed by k tokens
    }
    if (earliest < 0) continue;
    const int32_t from = earliest + n;
    const int32_t to = std::min(len, from + k);
    return std::vector<int32_t>(tokens.begin() + from, tokens.begin() + to);
  }
  return {};
}

}  // namespace kvscope
