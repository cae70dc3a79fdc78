// Greedy completions through the public engine API, for tests that compare
// token sequences (reference tests, equivalence tests).
#pragma once

#include <cstdint>
#include <vector>

#include "kvscope/engine.h"

namespace kvscope::test {

// Submits every prompt at once (temperature 0, EOS ignored, max_tokens each),
// runs the engine until idle, and returns each prompt's generated tokens in
// submission order.
std::vector<std::vector<int32_t>> greedy_tokens(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                                int32_t max_tokens);

}  // namespace kvscope::test
