// Greedy completions through the public engine API, for tests that compare
// token sequences (reference tests, equivalence tests).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kvscope/engine.h"

namespace kvscope::test {

// Submits every prompt at once (temperature 0, EOS ignored, max_tokens each),
// runs the engine until idle, and returns each prompt's generated tokens in
// submission order. `before_run`, when given, is called once everything is
// submitted (to step a little and change the engine mid-run).
std::vector<std::vector<int32_t>> greedy_tokens(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                                int32_t max_tokens, const std::function<void()>& before_run = {});

}  // namespace kvscope::test
