// Engine::interrupt (label `unit`, random tiny model): once interrupted, the
// engine reports no work, step() runs nothing and publishes no token, a
// stepping loop on another thread ends, and the engine is destroyed cleanly
// with its requests unfinished (run it under ASan: build-asan).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>

#include <unistd.h>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

class InterruptTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("interrupt");
    ASSERT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path_).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static std::unique_ptr<Engine> engine() {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.num_blocks = 64;
    auto created = Engine::create(c);
    EXPECT_TRUE(created.ok()) << created.error();
    return created.ok() ? std::move(created).value() : nullptr;
  }

  // A request that would run for many steps: EOS ignored.
  static GenerationRequest long_request(std::atomic<int>* num_events) {
    GenerationRequest r;
    r.prompt_tokens = {10, 11, 12, 13, 14, 15, 16, 17};
    r.sampling.temperature = 0.0f;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 200;
    r.on_event = [num_events](const TokenEvent&) { ++*num_events; };
    return r;
  }

  static std::string path_;
};
std::string InterruptTest::path_;

TEST_F(InterruptTest, InterruptedEngineStepsNoMore) {
  auto e = engine();
  ASSERT_TRUE(e);
  std::atomic<int> num_events{0};
  ASSERT_TRUE(e->submit(long_request(&num_events)).ok());
  e->step();  // the prompt; its first token is published
  const int before = num_events.load();
  ASSERT_GT(before, 0);
  ASSERT_TRUE(e->has_work());
  e->interrupt();
  EXPECT_FALSE(e->has_work());
  e->step();
  e->run_until_idle();  // returns: no work is reported
  EXPECT_EQ(num_events.load(), before);
}

TEST_F(InterruptTest, InterruptFromAnotherThreadEndsTheSteppingLoop) {
  auto e = engine();
  ASSERT_TRUE(e);
  // The stepping thread is held inside a step (in its 4th token's callback)
  // until the interrupt is in: however the threads are scheduled, the
  // requests cannot run to their end first.
  std::atomic<int> num_events{0};
  std::atomic<bool> interrupted{false};
  for (int i = 0; i < 2; ++i) {
    GenerationRequest r = long_request(&num_events);
    r.on_event = [&](const TokenEvent&) {
      if (++num_events == 4) {
        while (!interrupted.load()) std::this_thread::yield();
      }
    };
    ASSERT_TRUE(e->submit(std::move(r)).ok());
  }
  std::thread stepper([&] { e->run_until_idle(); });
  while (num_events.load() < 4) std::this_thread::yield();  // generating
  e->interrupt();
  interrupted = true;
  stepper.join();
  const int at_join = num_events.load();
  // The step in flight may still publish its other sequence's token; no step after it runs.
  EXPECT_LE(at_join, 5);
  e->step();
  EXPECT_EQ(num_events.load(), at_join);
}

}  // namespace
}  // namespace kvscope
