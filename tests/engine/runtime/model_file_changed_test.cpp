// A model file truncated or overwritten while the engine runs it (a user
// copying a new model over the one in use): the engine reads its weights from
// its own copies once loaded, so the steps after the change neither fault (a
// read of a page cut from a mapped file is SIGBUS, which ended the process)
// nor change a token.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

std::vector<int32_t> greedy_tokens(const std::string& model, bool truncate_after_first_steps) {
  EngineConfig c;
  c.model_path = model;
  c.num_threads = 2;
  auto created = Engine::create(c);
  EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
  if (!created.ok()) return {};
  Engine& engine = **created;
  std::vector<int32_t> tokens;
  GenerationRequest r;
  r.prompt_tokens = {5, 17, 40, 41, 99, 120};
  r.sampling.temperature = 0.0f;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 24;
  r.on_event = [&tokens](const TokenEvent& e) {
    if (e.token >= 0) tokens.push_back(e.token);
  };
  EXPECT_TRUE(engine.submit(std::move(r)).ok());
  for (int32_t i = 0; i < 3 && engine.has_work(); ++i) engine.step();
  if (truncate_after_first_steps) std::filesystem::resize_file(model, 64);
  engine.run_until_idle();
  return tokens;
}

TEST(ModelFileChanged, TruncatedWhileRunningChangesNothing) {
  for (TensorType type : {TensorType::F32, TensorType::Q8_0, TensorType::Q4_1}) {
    const std::string path = test::tiny_model_temp_path("model_file_changed");
    test::TinyModelSpec spec;
    spec.matrix_type = type;
    ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
    const std::vector<int32_t> untouched = greedy_tokens(path, false);
    const std::vector<int32_t> truncated = greedy_tokens(path, true);
    EXPECT_EQ(untouched.size(), 24u);
    EXPECT_EQ(untouched, truncated) << traits_of(type).name;
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace kvscope
