// Engine::reconfigure on a random tiny model (label `unit`): requests in
// flight (waiting, running, swapped) survive a change of block size, pool
// size, paging, preemption mode, batch limits and threads, and every streamed
// token and character equals an uninterrupted run, greedy or seeded sampling;
// one that no longer fits finishes with an error; a bad config or another
// model changes nothing. After each, the snapshot's block reference counts
// match the block tables and no block leaks. Cascade alone changes in place.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <unistd.h>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

constexpr int32_t kMaxTokens = 20;

struct Stream {
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason finish = FinishReason::None;
  std::string error;
  int32_t num_preemptions = 0;
};

struct Variant {
  const char* name;
  EngineConfig before, after;
  int32_t num_requests = 3;
  int32_t num_steps = 3;  // steps before reconfiguring
};

// Before and after, each from `base`.
std::vector<Variant> variants(const EngineConfig& base) {
  std::vector<Variant> out;
  {
    Variant v{"block 16 -> 7, 256 -> 40 blocks", base, base};
    v.after.block_size = 7;
    v.after.num_blocks = 40;
    out.push_back(v);
  }
  {
    Variant v{"paged -> contiguous", base, base};
    v.after.paged = false;
    out.push_back(v);
  }
  {
    Variant v{"contiguous block 4 -> paged block 2048", base, base};
    v.before.paged = false;
    v.before.block_size = 4;
    v.after.block_size = 2048;
    v.after.num_blocks = 8;
    out.push_back(v);
  }
  {
    // A small pool with swap: some requests are swapped out when it changes.
    Variant v{"swapped requests, block 4 -> 16, swap -> recompute", base, base};
    v.before.block_size = 4;
    v.before.num_blocks = 24;
    v.before.preemption = PreemptionMode::Swap;
    v.before.swap_space_bytes = 1 << 20;
    v.after.num_blocks = 20;
    v.num_requests = 9;
    v.num_steps = 0;  // until something is swapped
    out.push_back(v);
  }
  {
    Variant v{"chunks of 5 -> 256, 2 -> 1 thread, 8 -> 2 seqs, no prefix cache, static", base, base};
    v.before.max_batched_tokens = 5;
    v.after.max_batched_tokens = 256;
    v.after.num_threads = 1;
    v.after.max_seqs = 2;
    v.after.prefix_caching = false;
    v.after.policy = SchedulingPolicy::Static;
    v.num_steps = 4;
    out.push_back(v);
  }
  return out;
}

class Reconfigure : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("reconfigure");
    test::TinyModelSpec spec;
    spec.matrix_type = TensorType::Q8_0;
    spec.seed = 7;
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static EngineConfig config() {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.block_size = 16;
    c.num_blocks = 256;
    c.max_seqs = 8;
    c.max_batched_tokens = 64;
    return c;
  }

  // Prompts of 5, 11 and 23 tokens, and more of the same kind when asked.
  static std::vector<std::vector<int32_t>> prompts(int num = 3) {
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < num; ++i) {
      const int len = (i % 3 == 0 ? 5 : i % 3 == 1 ? 11 : 23) + i / 3;
      std::vector<int32_t> p;
      for (int k = 0; k < len; ++k) p.push_back((k * 37 + i * 11 + 3) % 250);
      out.push_back(p);
    }
    return out;
  }

  static SamplingParams sampling(bool greedy) {
    SamplingParams s;
    s.temperature = greedy ? 0.0f : 0.9f;
    s.seed = 1234;
    s.repetition_penalty = greedy ? 1.0f : 1.1f;
    s.max_tokens = kMaxTokens;
    s.ignore_eos = true;
    return s;
  }

  // Submits every prompt; streams land in `out` in submission order.
  static void submit_all(Engine& engine, const std::vector<std::vector<int32_t>>& ps, bool greedy,
                         std::vector<Stream>& out) {
    out.assign(ps.size(), Stream{});
    for (size_t i = 0; i < ps.size(); ++i) {
      GenerationRequest r;
      r.prompt_tokens = ps[i];
      r.sampling = sampling(greedy);
      Stream* s = &out[i];
      r.on_event = [s](const TokenEvent& ev) {
        if (ev.token >= 0) s->tokens.push_back(ev.token);
        s->text += ev.text;
        if (ev.finish != FinishReason::None) {
          EXPECT_EQ(s->finish, FinishReason::None) << "finished twice";
          s->finish = ev.finish;
          s->error = ev.error;
          s->num_preemptions = ev.stats.num_preemptions;
        }
      };
      auto id = engine.submit(std::move(r));
      ASSERT_TRUE(id.ok()) << id.error();
    }
  }

  static std::vector<Stream> uninterrupted(const std::vector<std::vector<int32_t>>& ps, bool greedy) {
    auto engine = Engine::create(config());
    EXPECT_TRUE(engine.ok());
    std::vector<Stream> out;
    submit_all(**engine, ps, greedy, out);
    (*engine)->run_until_idle();
    return out;
  }

  // Every used block's reference count is the number of tables holding it.
  static void expect_consistent_blocks(Engine& engine, const std::string& what) {
    const auto snap = engine.snapshot();
    std::vector<int32_t> holders(snap->blocks.size(), 0);
    for (const SequenceSnapshot& s : snap->sequences) {
      if (s.state == SequenceState::Swapped) continue;
      for (int32_t b : s.block_table) {
        ASSERT_LT(static_cast<size_t>(b), holders.size()) << what;
        ++holders[static_cast<size_t>(b)];
      }
    }
    for (size_t b = 0; b < snap->blocks.size(); ++b) {
      ASSERT_EQ(snap->blocks[b].ref_count, holders[b]) << what << ": block " << b;
    }
    EXPECT_EQ(snap->block_size, engine.config().block_size) << what;
    EXPECT_EQ(static_cast<int32_t>(snap->blocks.size()), engine.model_info().num_kv_blocks) << what;
  }

  // Runs to the end checking the blocks after every step; then nothing is held.
  static void run_checked(Engine& engine, const std::string& what) {
    expect_consistent_blocks(engine, what + ", right after reconfigure");
    while (engine.has_work()) {
      engine.step();
      expect_consistent_blocks(engine, what);
    }
    EXPECT_EQ(engine.kv_stats().num_used_blocks, 0) << what << ": leaked blocks";
    EXPECT_EQ(engine.kv_stats().num_used_swap_blocks, 0) << what << ": leaked swap blocks";
  }

  static void expect_same_streams(const std::vector<Stream>& got, const std::vector<Stream>& want,
                                  const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].finish, FinishReason::Length) << what << ", request " << i << ": " << got[i].error;
      EXPECT_EQ(got[i].tokens, want[i].tokens) << what << ", request " << i;
      EXPECT_EQ(got[i].text, want[i].text) << what << ", request " << i;
    }
  }

  // Reconfigures each variant with requests in flight; streams equal an uninterrupted run.
  static void reconfigure_mid_flight_keeps_streams(bool greedy) {
    for (const Variant& v : variants(config())) {
      SCOPED_TRACE(v.name);
      const auto ps = prompts(v.num_requests);
      auto engine = Engine::create(v.before);
      ASSERT_TRUE(engine.ok()) << engine.error();
      std::vector<Stream> got;
      submit_all(**engine, ps, greedy, got);
      if (v.num_steps > 0) {
        for (int i = 0; i < v.num_steps; ++i) (*engine)->step();
      } else {
        while ((*engine)->has_work() && (*engine)->snapshot()->num_swapped == 0) (*engine)->step();
        ASSERT_GT((*engine)->snapshot()->num_swapped, 0) << "the variant should swap requests out";
      }
      int32_t tokens_before = 0;
      for (const Stream& s : got) tokens_before += static_cast<int32_t>(s.tokens.size());
      EXPECT_GT(tokens_before, 0) << "reconfigure should come after some tokens were generated";
      ASSERT_TRUE((*engine)->has_work());

      const Status s = (*engine)->reconfigure(v.after);
      ASSERT_TRUE(s.ok()) << s.error();
      EXPECT_EQ((*engine)->config().block_size, v.after.block_size);
      EXPECT_EQ((*engine)->config().paged, v.after.paged);
      run_checked(**engine, v.name);
      expect_same_streams(got, uninterrupted(ps, greedy), v.name);
      // The engine's count goes on across the change and is the requests' own
      // counts added up (the inspector shows both; they must agree).
      int64_t per_request = 0;
      for (const Stream& st : got) per_request += st.num_preemptions;
      EXPECT_GT(per_request, 0) << "requests held KV when the settings changed";
      EXPECT_EQ((*engine)->kv_stats().num_preemptions, per_request);
    }
  }

  static std::string path_;
};
std::string Reconfigure::path_;

TEST_F(Reconfigure, GreedyStreamsContinueUnchanged) { reconfigure_mid_flight_keeps_streams(/*greedy=*/true); }

TEST_F(Reconfigure, SeededSamplingStreamsContinueUnchanged) {
  reconfigure_mid_flight_keeps_streams(/*greedy=*/false);
}

TEST_F(Reconfigure, RequestThatNoLongerFitsFinishesWithAnError) {
  const auto ps = prompts();
  const std::vector<Stream> want = uninterrupted(ps, /*greedy=*/true);
  struct Case {
    const char* name;
    EngineConfig after;
    const char* message_part;
  };
  // Prompts of 5, 11, 23 tokens + 20: up to 25, 31, 43 tokens = 7, 8, 11 blocks of 4.
  // The max model length is set: left at 0 it would become the pool's 36
  // tokens, and the longest request would run until that context is full.
  EngineConfig blocks = config();
  blocks.block_size = 4;
  blocks.num_blocks = 9;
  blocks.max_model_len = 64;
  // The 23-token prompt alone passes the new max model length; the others
  // still fit in it whole (25 and 31 tokens).
  EngineConfig length = config();
  length.max_model_len = 23;
  for (const Case& c :
       {Case{"pool too small", blocks, "KV blocks"}, Case{"context too short", length, "max model length"}}) {
    SCOPED_TRACE(c.name);
    auto engine = Engine::create(config());
    ASSERT_TRUE(engine.ok());
    std::vector<Stream> got;
    submit_all(**engine, ps, /*greedy=*/true, got);
    for (int i = 0; i < 3; ++i) (*engine)->step();
    ASSERT_TRUE((*engine)->reconfigure(c.after).ok());
    run_checked(**engine, c.name);
    EXPECT_EQ(got[2].finish, FinishReason::Error);
    EXPECT_NE(got[2].error.find(c.message_part), std::string::npos) << got[2].error;
    if (c.after.max_model_len == 64) {  // room enough: only the pool is short
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(got[i].finish, FinishReason::Length) << i;
        EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
      }
    } else {
      // 5 + 20 tokens fit in 23 no more: it stops at the context, with the same tokens so far.
      EXPECT_EQ(got[0].finish, FinishReason::ContextFull);
      EXPECT_EQ(got[0].tokens, std::vector<int32_t>(want[0].tokens.begin(), want[0].tokens.begin() + 18));
      EXPECT_EQ(got[1].finish, FinishReason::ContextFull);
      EXPECT_EQ(got[1].tokens, std::vector<int32_t>(want[1].tokens.begin(), want[1].tokens.begin() + 12));
    }
  }
}

// Left at 0, the max model length follows the pool (kv_plan): a smaller pool
// makes a shorter context, and the request that outgrows it stops at that
// context with the tokens it had, instead of failing.
TEST_F(Reconfigure, ASmallerPoolShortensAnUnsetContext) {
  const auto ps = prompts();
  const std::vector<Stream> want = uninterrupted(ps, /*greedy=*/true);
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  std::vector<Stream> got;
  submit_all(**engine, ps, /*greedy=*/true, got);
  for (int i = 0; i < 3; ++i) (*engine)->step();
  EngineConfig small = config();
  small.block_size = 4;
  small.num_blocks = 9;  // 36 tokens
  ASSERT_TRUE((*engine)->reconfigure(small).ok());
  EXPECT_EQ((*engine)->model_info().max_model_len, 36);
  EXPECT_EQ((*engine)->config().max_model_len, 36);
  run_checked(**engine, "small pool");
  for (size_t i = 0; i < 2; ++i) {  // 25 and 31 tokens: whole
    EXPECT_EQ(got[i].finish, FinishReason::Length) << i;
    EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
  }
  // 23 + 20 tokens do not fit in 36: 13 of the 20, the same as uninterrupted.
  EXPECT_EQ(got[2].finish, FinishReason::ContextFull);
  EXPECT_EQ(got[2].tokens, std::vector<int32_t>(want[2].tokens.begin(), want[2].tokens.begin() + 13));
}

// A request of n = 4 not yet forked, when max_seqs drops to 2: it could
// never be admitted again (its siblings count from admission on) and would
// hold the queue, so it finishes with an error naming max_seqs.
TEST_F(Reconfigure, ARequestOfMoreChoicesThanMaxSeqsFinishesWithAnError) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  FinishReason finish = FinishReason::None;
  std::string error;
  GenerationRequest r;
  r.prompt_tokens = prompts(1)[0];
  r.n = 4;
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = 4;
  r.on_event = [&](const TokenEvent& ev) {
    if (ev.index == 0 && ev.finish != FinishReason::None) {
      finish = ev.finish;
      error = ev.error;
    }
  };
  ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  EngineConfig fewer = config();
  fewer.max_seqs = 2;
  ASSERT_TRUE((*engine)->reconfigure(fewer).ok());
  for (int i = 0; i < 100 && (*engine)->has_work(); ++i) (*engine)->step();
  EXPECT_FALSE((*engine)->has_work()) << "the queue is not held";
  EXPECT_EQ(finish, FinishReason::Error);
  EXPECT_NE(error.find("more than max_seqs = 2"), std::string::npos) << error;
}

TEST_F(Reconfigure, InvalidConfigChangesNothing) {
  const auto ps = prompts();
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  std::vector<Stream> got;
  submit_all(**engine, ps, /*greedy=*/true, got);
  for (int i = 0; i < 3; ++i) (*engine)->step();
  const ModelInfo info_before = (*engine)->model_info();

  EngineConfig bad = config();
  bad.block_size = 0;
  const Status s = (*engine)->reconfigure(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), problems_status(bad.validate()).error());
  // Valid alone, but the budget holds no block.
  EngineConfig tiny_budget = config();
  tiny_budget.num_blocks = 0;
  tiny_budget.kv_budget_bytes = 100;
  const Status t = (*engine)->reconfigure(tiny_budget);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("KV budget"), std::string::npos) << t.error();

  EXPECT_EQ((*engine)->config().block_size, config().block_size);
  EXPECT_EQ((*engine)->model_info().num_kv_blocks, info_before.num_kv_blocks);
  EXPECT_EQ((*engine)->model_info().kv_pool_bytes, info_before.kv_pool_bytes);
  run_checked(**engine, "after refused configs");
  expect_same_streams(got, uninterrupted(ps, /*greedy=*/true), "after refused configs");
  for (const Stream& st : got) EXPECT_EQ(st.num_preemptions, 0) << "a refused config must not touch requests";
}

TEST_F(Reconfigure, AnotherModelNeedsCreate) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  EngineConfig other = config();
  other.model_path = path_ + ".other.gguf";
  const Status s = (*engine)->reconfigure(other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("Engine::create"), std::string::npos) << s.error();
  EXPECT_EQ((*engine)->config().model_path, path_);
  std::vector<Stream> got;
  submit_all(**engine, prompts(), /*greedy=*/true, got);
  run_checked(**engine, "after refusing another model");
  expect_same_streams(got, uninterrupted(prompts(), /*greedy=*/true), "after refusing another model");
}

// Requests submitted but not yet stepped, on an idle engine, take the new block size.
TEST_F(Reconfigure, QueuedRequestsTakeTheNewPool) {
  const auto ps = prompts();
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  std::vector<Stream> got;
  submit_all(**engine, ps, /*greedy=*/true, got);
  EngineConfig after = config();
  after.block_size = 3;
  after.num_blocks = 64;
  ASSERT_TRUE((*engine)->reconfigure(after).ok());
  run_checked(**engine, "queued requests");
  expect_same_streams(got, uninterrupted(ps, /*greedy=*/true), "queued requests");
  for (const Stream& st : got) EXPECT_EQ(st.num_preemptions, 0) << "they held no KV: nothing was preempted";
}

// Cascade (and record_snapshots) change in place: mid-flight, no request is
// re-queued, the prefix cache and its counters stay, the next step uses the
// new mode, and the streams equal an uninterrupted run. The same change with
// one more setting goes the whole way (requests held KV: preempted).
TEST_F(Reconfigure, CascadeChangesInPlace) {
  const auto ps = prompts();
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  std::vector<Stream> got;
  submit_all(**engine, ps, /*greedy=*/true, got);
  for (int i = 0; i < 3; ++i) (*engine)->step();
  const KvStats before = (*engine)->kv_stats();
  ASSERT_GT(before.num_used_blocks, 0);
  EngineConfig after = config();
  after.cascade = CascadeMode::On;
  after.record_snapshots = true;
  ASSERT_TRUE((*engine)->reconfigure(after).ok());
  EXPECT_EQ((*engine)->config().cascade, CascadeMode::On);
  EXPECT_TRUE((*engine)->config().record_snapshots);
  const KvStats kept = (*engine)->kv_stats();
  EXPECT_EQ(kept.num_used_blocks, before.num_used_blocks) << "the pool is the same pool";
  EXPECT_EQ(kept.num_prefix_queried_tokens, before.num_prefix_queried_tokens) << "counters go on";
  run_checked(**engine, "cascade in place");
  expect_same_streams(got, uninterrupted(ps, /*greedy=*/true), "cascade in place");
  for (const Stream& st : got) EXPECT_EQ(st.num_preemptions, 0) << "nothing was re-queued";

  // Back to auto with another block size: rebuilt, requests re-queued.
  std::vector<Stream> again;
  submit_all(**engine, ps, /*greedy=*/true, again);
  for (int i = 0; i < 3; ++i) (*engine)->step();
  EngineConfig rebuilt = config();
  rebuilt.block_size = 8;
  ASSERT_TRUE((*engine)->reconfigure(rebuilt).ok());
  EXPECT_EQ((*engine)->config().cascade, CascadeMode::Auto);
  run_checked(**engine, "cascade and block size");
  int32_t preemptions = 0;
  for (const Stream& st : again) preemptions += st.num_preemptions;
  EXPECT_GT(preemptions, 0);
}

}  // namespace
}  // namespace kvscope
