// A model file truncated or overwritten while the engine runs it (a user
// copying a new model over the one in use): the engine reads its weights from
// its own copies once loaded, so the steps after the change neither fault (a
// read of a page cut from a mapped file is SIGBUS, which ended the process)
// nor change a token. And the file's pages are released once copied.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
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

// This process's resident pages of mapped files (kB), from /proc/self/status.
int64_t rss_file_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssFile:", 0) == 0) return std::stoll(line.substr(8));
  }
  return -1;
}

// Once the backend holds its copies, the model file's pages leave the
// process's memory (the copies would otherwise count the weights twice).
TEST(ModelFileChanged, FilePagesAreReleasedOnceCopied) {
  const std::string path = test::tiny_model_temp_path("model_file_pages");
  test::TinyModelSpec spec;  // ~33 MB of f32 matrices
  spec.hidden = 512;
  spec.ffn = 2048;
  spec.heads = 8;
  spec.kv_heads = 2;
  spec.head_dim = 64;
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  const auto file_kb = static_cast<int64_t>(std::filesystem::file_size(path) / 1024);
  const int64_t before = rss_file_kb();
  ASSERT_GE(before, 0) << "no RssFile in /proc/self/status";
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 2;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.error();
  const int64_t after = rss_file_kb();
  EXPECT_LT(after - before, file_kb / 4) << "file " << file_kb << " kB, resident file pages " << before << " -> "
                                         << after << " kB";
  // It still runs: the copies are what the steps read.
  GenerationRequest r;
  r.prompt_tokens = {5, 6, 7};
  r.sampling.max_tokens = 2;
  ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  (*engine)->run_until_idle();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvscope
