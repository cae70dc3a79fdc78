// Engine::create with a LoadProgress (label `unit`, random tiny model): the
// fraction never goes back, reaches 1, names every stage and reports weight
// repacking per tensor group; returning false cancels with "loading cancelled"
// and leaves nothing behind (no mapping of the model file, no worker thread).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

struct Report {
  double fraction;
  std::string stage;
};

class LoadProgressTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("load_progress");
    test::TinyModelSpec spec;
    spec.layers = 3;
    spec.matrix_type = TensorType::Q8_0;
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static EngineConfig config() {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 3;
    c.num_blocks = 64;
    return c;
  }

  // Lines of /proc/self/maps naming the model file (its mapping while loaded).
  static int num_model_mappings() {
    std::ifstream maps("/proc/self/maps");
    int n = 0;
    for (std::string line; std::getline(maps, line);) n += line.find(path_) != std::string::npos;
    return n;
  }

  static int num_threads() {
    return static_cast<int>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                          std::filesystem::directory_iterator{}));
  }

  static std::string path_;
};
std::string LoadProgressTest::path_;

TEST_F(LoadProgressTest, FractionsRiseToOneThroughEveryStage) {
  std::vector<Report> reports;
  auto engine = Engine::create(config(), [&](double f, std::string_view stage) {
    reports.push_back({f, std::string(stage)});
    return true;
  });
  ASSERT_TRUE(engine.ok()) << engine.error();
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.front().fraction, 0.0);
  EXPECT_EQ(reports.back().fraction, 1.0);
  for (size_t i = 1; i < reports.size(); ++i) {
    EXPECT_GE(reports[i].fraction, reports[i - 1].fraction) << "report " << i << " (" << reports[i].stage << ")";
    EXPECT_LE(reports[i].fraction, 1.0);
  }
  for (const char* stage : {"reading model file", "loading tokenizer", "allocating KV pool", "repacking weights"}) {
    EXPECT_TRUE(std::any_of(reports.begin(), reports.end(), [&](const Report& r) { return r.stage == stage; }))
        << stage;
  }
  // Per tensor group: Q|K|V, O, gate|up, down for each of 3 layers, and the head.
  const auto repacking = std::count_if(reports.begin(), reports.end(),
                                       [](const Report& r) { return r.stage == "repacking weights"; });
  EXPECT_GE(repacking, 3 * 4 + 1);
  // The engine works.
  GenerationRequest r;
  r.prompt_tokens = {1, 2, 3};
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = 4;
  ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  (*engine)->run_until_idle();
}

TEST_F(LoadProgressTest, CancelReturnsTheCancelledErrorAndKeepsNothing) {
  const int threads_before = num_threads();
  ASSERT_EQ(num_model_mappings(), 0);
  // Cancel at the first report, and later, in the middle of repacking (the
  // model is mapped and the thread pool runs by then).
  for (int cancel_at : {1, 8}) {
    SCOPED_TRACE(cancel_at);
    int calls = 0;
    int mappings_seen = 0;
    auto engine = Engine::create(config(), [&](double, std::string_view) {
      mappings_seen = std::max(mappings_seen, num_model_mappings());
      return ++calls < cancel_at;
    });
    ASSERT_FALSE(engine.ok());
    EXPECT_EQ(engine.error(), "loading cancelled");
    EXPECT_EQ(engine.error(), kLoadCancelledMessage);
    EXPECT_EQ(calls, cancel_at) << "no report after the cancelling one";
    if (cancel_at > 1) {
      EXPECT_GT(mappings_seen, 0) << "the model should have been mapped while loading";
    }
    EXPECT_EQ(num_model_mappings(), 0) << "the model file is still mapped";
    EXPECT_EQ(num_threads(), threads_before) << "worker threads were left running";
  }
}

}  // namespace
}  // namespace kvscope
