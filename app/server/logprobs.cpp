// Log-softmax pieces (see logprobs.h).
#include "logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace kvscope::server {

float log_sum_exp(const float* logits, int32_t n) {
  if (n <= 0) return -std::numeric_limits<float>::infinity();
  const float max = *std::max_element(logits, logits + n);
  if (!std::isfinite(max)) return max;
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  return max + static_cast<float>(std::log(sum));
}

std::vector<TopLogprob> top_logprobs(const float* logits, int32_t n, float lse, int32_t k) {
  k = std::clamp(k, 0, std::max(n, 0));
  std::vector<int32_t> ids(static_cast<size_t>(std::max(n, 0)));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [logits](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<TopLogprob> top;
  top.reserve(static_cast<size_t>(k));
  for (int32_t i = 0; i < k; ++i) top.push_back({ids[static_cast<size_t>(i)], logits[ids[static_cast<size_t>(i)]] - lse});
  return top;
}

}  // namespace kvscope::server
