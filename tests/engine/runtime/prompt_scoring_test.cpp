// Prompt scoring (GenerationRequest::on_prompt_logits), label `unit`, on a
// random tiny model: every prompt position after the first is told once, in
// order, before the first token; its logits are bitwise the logits a request
// with the prompt cut before that position samples its first token from;
// chunked prefill, a prefix cache that holds the prompt, other requests in
// the batch and a preemption in the middle of the prompt change nothing.
// The default model's long prompts (several steps' worth of scored rows) are
// prompt_scoring_model_test's.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <map>
#include <random>
#include <vector>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

class PromptScoring : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("prompt_scoring");
    test::TinyModelSpec spec;
    spec.matrix_type = TensorType::Q8_0;
    spec.seed = 5;
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
    // A large vocabulary, so that the step's bound on scored rows
    // (8M floats of logits: 128 rows) binds before the token budget.
    wide_path_ = test::tiny_model_temp_path("prompt_scoring_wide");
    spec.vocab = 65536;
    ASSERT_TRUE(test::write_tiny_gguf(spec, wide_path_).ok());
  }
  static void TearDownTestSuite() {
    std::filesystem::remove(path_);
    std::filesystem::remove(wide_path_);
  }

  static EngineConfig config() {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.block_size = 4;
    c.max_batched_tokens = 8;  // a 45-token prompt takes six steps
    return c;
  }

  static std::vector<int32_t> prompt(uint32_t seed, int length) {
    std::mt19937 rng(seed);
    std::vector<int32_t> tokens;
    for (int i = 0; i < length; ++i) tokens.push_back(static_cast<int32_t>(rng() % 250));
    return tokens;
  }

  // What one request saw: its scored positions with their logits, in the
  // order told, and where in that order its first token arrived.
  struct Scored {
    std::vector<int32_t> positions;
    std::map<int32_t, std::vector<float>> logits;  // position -> [vocab]
    std::vector<int32_t> tokens;
    size_t scored_before_first_token = 0;
    RequestStats stats;
    bool finished = false;
  };

  static GenerationRequest scoring_request(const std::vector<int32_t>& tokens, Scored& out, int32_t max_tokens = 3) {
    GenerationRequest r;
    r.prompt_tokens = tokens;
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = max_tokens;
    r.sampling.ignore_eos = true;
    r.on_prompt_logits = [&out, tokens](int32_t position, int32_t token, const float* logits, int32_t vocab) {
      EXPECT_EQ(token, tokens.at(static_cast<size_t>(position)));
      out.positions.push_back(position);
      out.logits[position].assign(logits, logits + vocab);
    };
    r.on_event = [&out](const TokenEvent& ev) {
      if (ev.token >= 0) {
        if (out.tokens.empty()) out.scored_before_first_token = out.positions.size();
        out.tokens.push_back(ev.token);
      }
      if (ev.finish != FinishReason::None) {
        out.finished = true;
        out.stats = ev.stats;
      }
    };
    return r;
  }

  static std::vector<int32_t> one_to(int32_t last) {
    std::vector<int32_t> v;
    for (int32_t p = 1; p <= last; ++p) v.push_back(p);
    return v;
  }

  static void run(Engine& engine) {
    while (engine.has_work()) engine.step();
  }

  static std::string path_, wide_path_;
};
std::string PromptScoring::path_, PromptScoring::wide_path_;

TEST_F(PromptScoring, EveryPositionOnceInOrderBeforeTheFirstToken) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.error();
  Scored scored;
  // Plain requests in the same steps: their rows sit between the scored ones.
  std::vector<Scored> others(3);
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r = scoring_request(prompt(100 + static_cast<uint32_t>(i), 5 + i), others[static_cast<size_t>(i)], 6);
    r.on_prompt_logits = nullptr;
    ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  }
  ASSERT_TRUE((*engine)->submit(scoring_request(prompt(1, 45), scored)).ok());
  run(**engine);
  ASSERT_TRUE(scored.finished);
  EXPECT_EQ(scored.positions, one_to(44));
  EXPECT_EQ(scored.scored_before_first_token, 44u);
  EXPECT_EQ(scored.tokens.size(), 3u);
  for (const Scored& o : others) {
    EXPECT_TRUE(o.positions.empty());
    EXPECT_EQ(o.tokens.size(), 6u);
  }
}

TEST_F(PromptScoring, APositionsLogitsAreThoseTheCutPromptSamplesFrom) {
  const std::vector<int32_t> tokens = prompt(2, 30);
  Scored scored;
  {
    auto engine = Engine::create(config());
    ASSERT_TRUE(engine.ok()) << engine.error();
    ASSERT_TRUE((*engine)->submit(scoring_request(tokens, scored)).ok());
    run(**engine);
  }
  ASSERT_EQ(scored.positions, one_to(29));
  // Cut where a chunk starts, inside one, at a block's edge, at the end.
  for (int32_t p : {1, 2, 7, 8, 9, 16, 23, 29}) {
    auto engine = Engine::create(config());
    ASSERT_TRUE(engine.ok()) << engine.error();
    std::vector<float> first_token_logits;
    GenerationRequest r;
    r.prompt_tokens.assign(tokens.begin(), tokens.begin() + p);
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = 1;
    r.on_logits = [&](int32_t, int32_t position, const float* logits, int32_t vocab) {
      EXPECT_EQ(position, p);
      first_token_logits.assign(logits, logits + vocab);
    };
    ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
    run(**engine);
    EXPECT_EQ(first_token_logits, scored.logits.at(p)) << "position " << p;
  }
}

TEST_F(PromptScoring, APromptInThePrefixCacheIsScoredInFull) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.error();
  const std::vector<int32_t> tokens = prompt(3, 33);
  Scored first, second;
  ASSERT_TRUE((*engine)->submit(scoring_request(tokens, first)).ok());
  run(**engine);
  ASSERT_TRUE((*engine)->submit(scoring_request(tokens, second)).ok());
  run(**engine);
  EXPECT_EQ(second.positions, one_to(32));
  EXPECT_EQ(second.logits, first.logits);
  EXPECT_EQ(second.stats.num_cached_prompt_tokens, 0);
  // The cache did hold the prompt: a request that does not score reads it.
  Scored plain;
  GenerationRequest r = scoring_request(tokens, plain);
  r.on_prompt_logits = nullptr;
  ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  run(**engine);
  EXPECT_GT(plain.stats.num_cached_prompt_tokens, 0);
  EXPECT_EQ(plain.tokens, first.tokens);
}

// A long prompt admitted beside a short one with a long reply: the pool runs
// dry while the long prompt is still being scored, it is preempted
// (recompute) with part of it scored, and scores the rest, each position
// once, when it comes back.
TEST_F(PromptScoring, APreemptionInThePromptScoresEachPositionOnce) {
  EngineConfig c = config();
  c.max_batched_tokens = 12;
  c.num_blocks = 12;  // 48 slots: either request alone, not both
  const std::vector<int32_t> a = prompt(4, 8), b = prompt(5, 40);
  Scored alone_b;
  {
    auto engine = Engine::create(config());
    ASSERT_TRUE(engine.ok()) << engine.error();
    ASSERT_TRUE((*engine)->submit(scoring_request(b, alone_b, 8)).ok());
    run(**engine);
  }
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.error();
  Scored sa, sb;
  ASSERT_TRUE((*engine)->submit(scoring_request(a, sa, 40)).ok());
  ASSERT_TRUE((*engine)->submit(scoring_request(b, sb, 8)).ok());
  run(**engine);
  ASSERT_TRUE(sa.finished && sb.finished);
  EXPECT_EQ(sb.stats.num_preemptions, 1) << "the test did not preempt the long prompt";
  EXPECT_EQ(sa.positions, one_to(7));
  EXPECT_EQ(sb.positions, one_to(39));
  EXPECT_EQ(sb.logits, alone_b.logits);
  EXPECT_EQ(sb.tokens, alone_b.tokens);
}

// Parallel samples share the prompt: it is scored once, by the request.
TEST_F(PromptScoring, ParallelSamplesScoreThePromptOnce) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.error();
  Scored scored;
  GenerationRequest r = scoring_request(prompt(6, 17), scored);
  r.n = 3;
  r.sampling.temperature = 0.8f;
  ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  run(**engine);
  EXPECT_EQ(scored.positions, one_to(16));
  EXPECT_EQ(scored.tokens.size(), 9u);
}

// max_tokens = 0 (OpenAI's echo-only scoring): the prompt is run and scored,
// and every completion ends with no token.
TEST_F(PromptScoring, MaxTokensZeroScoresThePromptAndSamplesNothing) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.error();
  Scored scored;
  std::vector<TokenEvent> finishes;
  GenerationRequest r = scoring_request(prompt(7, 21), scored, 0);
  r.n = 2;
  r.on_event = [&](const TokenEvent& ev) {
    if (ev.token >= 0) scored.tokens.push_back(ev.token);
    if (ev.finish != FinishReason::None) finishes.push_back(ev);
  };
  ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  run(**engine);
  EXPECT_EQ(scored.positions, one_to(20));
  EXPECT_TRUE(scored.tokens.empty());
  ASSERT_EQ(finishes.size(), 2u);
  for (const TokenEvent& ev : finishes) {
    EXPECT_EQ(ev.finish, FinishReason::Length);
    EXPECT_EQ(ev.stats.num_generated_tokens, 0);
    EXPECT_EQ(ev.stats.num_prompt_tokens, 21);
    EXPECT_TRUE(ev.text.empty());
  }
  EXPECT_FALSE((*engine)->has_work());
}

// With a 65,536-token vocabulary a step scores at most 128 rows: the long
// prompts are cut there (rows before the first one scored do not count), the
// step never tells more, and the bits are those of another chunking.
TEST_F(PromptScoring, AStepScoresABoundedNumberOfRows) {
  EngineConfig c = config();
  c.model_path = wide_path_;
  c.block_size = 16;
  c.max_batched_tokens = 512;
  const std::vector<int32_t> a = prompt(8, 300), b = prompt(9, 200);
  Scored sa, sb, second_half;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.error();
  ASSERT_TRUE((*engine)->submit(scoring_request(a, sa, 1)).ok());
  ASSERT_TRUE((*engine)->submit(scoring_request(b, sb, 1)).ok());
  // As perplexity asks: only the second half of `a`, its first half run unscored.
  GenerationRequest half = scoring_request(a, second_half, 0);
  half.first_scored_position = 150;
  ASSERT_TRUE((*engine)->submit(std::move(half)).ok());
  size_t told = 0, most_in_a_step = 0;
  while ((*engine)->has_work()) {
    (*engine)->step();
    const size_t now = sa.positions.size() + sb.positions.size() + second_half.positions.size();
    most_in_a_step = std::max(most_in_a_step, now - told);
    told = now;
  }
  EXPECT_EQ(most_in_a_step, 128u);
  EXPECT_EQ(sa.positions, one_to(299));
  EXPECT_EQ(sb.positions, one_to(199));
  std::vector<int32_t> from_150;
  for (int32_t p = 150; p <= 299; ++p) from_150.push_back(p);
  EXPECT_EQ(second_half.positions, from_150);
  for (int32_t p : {150, 151, 200, 299}) EXPECT_EQ(second_half.logits.at(p), sa.logits.at(p)) << "position " << p;

  c.max_batched_tokens = 16;
  auto small_steps = Engine::create(c);
  ASSERT_TRUE(small_steps.ok()) << small_steps.error();
  Scored alone;
  ASSERT_TRUE((*small_steps)->submit(scoring_request(a, alone, 1)).ok());
  run(**small_steps);
  EXPECT_EQ(alone.logits, sa.logits);
  EXPECT_EQ(alone.tokens, sa.tokens);
}

// A prompt to score is scored whole: with context_overflow = truncate_middle
// one too long for the context is refused instead of cut. max_tokens = 0
// needs no room after the prompt, so a prompt as long as the context fits.
TEST_F(PromptScoring, APromptToScoreIsNeverTruncated) {
  EngineConfig c = config();
  c.max_model_len = 64;
  c.context_overflow = ContextOverflow::TruncateMiddle;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.error();
  Scored scored, plain;
  auto refused = (*engine)->submit(scoring_request(prompt(10, 80), scored));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("a prompt to score is not truncated"), std::string::npos) << refused.error();
  GenerationRequest r = scoring_request(prompt(10, 80), plain);
  r.on_prompt_logits = nullptr;
  SubmittedPrompt submitted;
  ASSERT_TRUE((*engine)->submit(std::move(r), &submitted).ok());
  EXPECT_GT(submitted.num_dropped_tokens, 0);

  Scored whole;
  ASSERT_TRUE((*engine)->submit(scoring_request(prompt(11, 64), whole, 0)).ok());
  run(**engine);
  EXPECT_EQ(whole.positions, one_to(63));
  EXPECT_FALSE((*engine)->submit(scoring_request(prompt(11, 64), whole, 1)).ok()) << "no room for a reply";
}

// A one-token prompt has nothing to score.
TEST_F(PromptScoring, AOneTokenPromptScoresNothing) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.error();
  Scored scored;
  ASSERT_TRUE((*engine)->submit(scoring_request({42}, scored)).ok());
  run(**engine);
  EXPECT_TRUE(scored.positions.empty());
  EXPECT_EQ(scored.tokens.size(), 3u);
}

}  // namespace
}  // namespace kvscope
