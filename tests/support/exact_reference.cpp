#include "support/exact_reference.h"

#include <cmath>
#include <fstream>

#include "support/test_paths.h"

namespace kvscope::test {

nlohmann::json load_test_json(const std::string& name) {
  std::ifstream in(test_data_dir() + "/" + name);
  return nlohmann::json::parse(in);
}

ExactCall exact_call(const nlohmann::json& exact_prompt, size_t step) {
  const auto& t = exact_prompt["top2"][step];
  return {t[0].get<int32_t>(), t[1].get<int32_t>(), t[2].get<float>()};
}

int most_of_n_by_chance(int n, double alpha) {
  double tail = 0;  // P(X >= k), accumulated from k = n downwards
  for (int k = n; k >= 0; --k) {
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) - n * std::log(2.0));
    if (tail > alpha) return k;
  }
  return n;
}

}  // namespace kvscope::test
