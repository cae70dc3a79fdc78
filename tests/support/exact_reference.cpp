#include "support/exact_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "support/test_paths.h"

namespace kvscope::test {

nlohmann::json load_test_json(const std::string& name) {
  std::ifstream in(test_data_dir() + "/" + name);
  return nlohmann::json::parse(in);
}

LlamaSequence llama_sequence(const nlohmann::json& llama_prompt) {
  LlamaSequence s;
  s.tokens = llama_prompt["prompt_ids"].get<std::vector<int32_t>>();
  s.greedy = llama_prompt["greedy_ids"].get<std::vector<int32_t>>();
  s.num_prompt = s.tokens.size();
  s.tokens.insert(s.tokens.end(), s.greedy.begin(), s.greedy.end() - 1);
  return s;
}

ExactCall exact_call(const nlohmann::json& exact_prompt, size_t step) {
  const auto& t = exact_prompt["top2"][step];
  return {t[0].get<int32_t>(), t[1].get<int32_t>(), t[2].get<float>()};
}

void FlipCount::add(int32_t picked, const ExactCall& exact) {
  if (picked == exact.argmax) return;
  ++count;
  if (picked == exact.runner_up) ++at_runner_up;
  max_gap = std::max(max_gap, exact.gap);
}

std::ostream& operator<<(std::ostream& out, const FlipCount& f) {
  return out << f.count << " (" << f.at_runner_up << " of them the exact runner-up; largest exact gap " << f.max_gap
             << ")";
}

ExactTally::Position ExactTally::add_position(const float* row, int32_t vocab, int32_t llama_token,
                                              const nlohmann::json& exact_prompt, size_t step) {
  const int32_t ours = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
  const ExactCall exact = exact_call(exact_prompt, step);
  ours_flips.add(ours, exact);
  llama_flips.add(llama_token, exact);
  ours_vs_llama += ours != llama_token;
  ours_alone += ours != exact.argmax && llama_token == exact.argmax;
  llama_alone += ours == exact.argmax && llama_token != exact.argmax;
  ++positions;
  return {ours, exact};
}

std::vector<ExactTally::Logit> ExactTally::add_top5(const float* row, const nlohmann::json& llama_top5,
                                                    const nlohmann::json& exact_top5) {
  std::vector<Logit> out;
  for (size_t k = 0; k < llama_top5.size(); ++k) {
    const int32_t id = llama_top5[k][0].get<int32_t>();
    EXPECT_EQ(id, exact_top5[k][0].get<int32_t>()) << "the reference files disagree on top-5 candidate " << k;
    const float llama = llama_top5[k][1].get<float>(), exact = exact_top5[k][1].get<float>();
    const Logit l{id, std::fabs(row[id] - exact), std::fabs(row[id] - llama)};
    worst_ours_exact = std::max(worst_ours_exact, l.ours_vs_exact);
    worst_ours_llama = std::max(worst_ours_llama, l.ours_vs_llama);
    worst_llama_exact = std::max(worst_llama_exact, std::fabs(llama - exact));
    sum_ours_exact += l.ours_vs_exact;
    sum_llama_exact += std::fabs(llama - exact);
    ++logits;
    if (k > 0) {
      const int32_t top = llama_top5[0][0].get<int32_t>();
      const float exact_gap = exact - exact_top5[0][1].get<float>();
      sum_ours_gap += std::fabs((row[id] - row[top]) - exact_gap);
      sum_llama_gap += std::fabs((llama - llama_top5[0][1].get<float>()) - exact_gap);
      ++gaps;
    }
    out.push_back(l);
  }
  return out;
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
