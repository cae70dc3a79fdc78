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
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvscope::test {

// Exact top-two gap above which no engine may pick another token: the
// engines' noise is a few tenths of a logit (llama_reference_test.cpp says
// how that was measured).
inline constexpr float kMaxFlipGap = 1.0f;

// A JSON file of tests/data.
nlohmann::json load_test_json(const std::string& name);

// llama.cpp's own sequence for one reference prompt, as the teacher-forced
// tests feed it: the prompt ids and llama.cpp's greedy tokens but the last,
// so that row num_prompt - 1 + i predicts greedy[i].
struct LlamaSequence {
  std::vector<int32_t> tokens;
  std::vector<int32_t> greedy;
  size_t num_prompt = 0;
};
LlamaSequence llama_sequence(const nlohmann::json& llama_prompt);

// The exact model's verdict at one generated position of llama.cpp's sequence.
struct ExactCall {
  int32_t argmax = 0;
  int32_t runner_up = 0;
  float gap = 0;  // exact logit of argmax minus that of runner_up
};

ExactCall exact_call(const nlohmann::json& exact_prompt, size_t step);

// Disagreements with the exact argmax over teacher-forced positions.
struct FlipCount {
  int count = 0;
  int at_runner_up = 0;  // of which the engine picked the exact runner-up
  float max_gap = 0;     // largest exact top-two gap at a disagreement
  void add(int32_t picked, const ExactCall& exact);
};
std::ostream& operator<<(std::ostream& out, const FlipCount& f);

// An engine's teacher-forced logits on llama.cpp's sequences, against the
// exact model and llama.cpp, added up position by position: what both
// reference tests (CPU: llama_reference_test.cpp, GPU: cuda_reference_test.cpp)
// count before they judge.
struct ExactTally {
  struct Position {
    int32_t ours;  // the engine's argmax
    ExactCall exact;
  };
  // One generated position: the engine's logits row there and llama.cpp's
  // greedy token (its argmax there).
  Position add_position(const float* row, int32_t vocab, int32_t llama_token, const nlohmann::json& exact_prompt,
                        size_t step);
  struct Logit {
    int32_t id;
    float ours_vs_exact;
    float ours_vs_llama;
  };
  // llama.cpp's recorded top-5 at one step (ids and logits) and the exact
  // logits of the same ids (a test failure if the ids differ).
  std::vector<Logit> add_top5(const float* row, const nlohmann::json& llama_top5, const nlohmann::json& exact_top5);

  int positions = 0;
  int ours_vs_llama = 0;  // positions where the engine's argmax is not llama.cpp's token
  int ours_alone = 0;     // only the engine parts from the exact argmax
  int llama_alone = 0;    // only llama.cpp does
  FlipCount ours_flips, llama_flips;
  int logits = 0;  // top-5 values compared
  double sum_ours_exact = 0, sum_llama_exact = 0;
  float worst_ours_exact = 0, worst_ours_llama = 0, worst_llama_exact = 0;
  // The distance below the top candidate (what decides the argmax), ours and llama.cpp's vs exact.
  int gaps = 0;
  double sum_ours_gap = 0, sum_llama_gap = 0;
};

// The largest k such that, were two engines equally likely to be the one that
// parts from the exact model at each of n positions where exactly one does,
// the first parting alone at more than k of them has probability below alpha
// (one-sided binomial tail with p = 1/2): a sign test.
int most_of_n_by_chance(int n, double alpha);

}  // namespace kvscope::test
