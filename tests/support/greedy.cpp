#include "support/greedy.h"

#include <gtest/gtest.h>

namespace kvscope::test {

std::vector<std::vector<int32_t>> greedy_tokens(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                                int32_t max_tokens, const std::function<void()>& before_run) {
  std::vector<std::vector<int32_t>> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest r;
    r.prompt_tokens = prompts[i];
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = max_tokens;
    r.sampling.ignore_eos = true;
    r.on_event = [&out, i](const TokenEvent& ev) {
      if (ev.token >= 0) out[i].push_back(ev.token);
    };
    auto id = engine.submit(std::move(r));
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error());
  }
  if (before_run) before_run();
  engine.run_until_idle();
  return out;
}

}  // namespace kvscope::test
