// The default model's reference data (tests/data/smollm2_llamacpp_reference.json
// and smollm2_exact_reference.json) and the judgement both reference tests
// make with it: where an engine's greedy token parts from another's, the
// exact model (a float64 forward over the dequantised weights, teacher-forced
// on llama.cpp's sequence) says who was right, and by how much.
// Used by tests/engine/runtime/llama_reference_test.cpp (CPU) and
// cuda_reference_test.cpp (GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kvscope::test {

// Exact top-two gap above which no engine may pick another token: the
// engines' noise is a few tenths of a logit (llama_reference_test.cpp says
// how that was measured).
inline constexpr float kMaxFlipGap = 1.0f;

// A JSON file of tests/data.
nlohmann::json load_test_json(const std::string& name);

// The exact model's verdict at one generated position of llama.cpp's sequence.
struct ExactCall {
  int32_t argmax = 0;
  int32_t runner_up = 0;
  float gap = 0;  // exact logit of argmax minus that of runner_up
};

ExactCall exact_call(const nlohmann::json& exact_prompt, size_t step);

// The largest k such that, were two engines equally likely to be the one that
// parts from the exact model at each of n positions where exactly one does,
// the first parting alone at more than k of them has probability below alpha
// (one-sided binomial tail with p = 1/2): a sign test.
int most_of_n_by_chance(int n, double alpha);

}  // namespace kvscope::test
