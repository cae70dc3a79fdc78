// Continuous batching on a random tiny model (label `unit`): whatever the
// allocation (paged, contiguous), scheduling (continuous, static), memory
// pressure (preemption by recompute or swap), prefix caching or parallel
// sampling, every request's greedy tokens equal those of an unconstrained run,
// nothing is dropped, and no block leaks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include <unistd.h>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

constexpr int32_t kMaxTokens = 12;

class Batching : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("batching");
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
    c.block_size = 4;
    c.num_blocks = 4096;
    c.max_seqs = 256;
    c.max_batched_tokens = 256;
    return c;
  }

  // 256 prompts of 6..13 tokens; every 4th shares a 12-token prefix.
  static std::vector<std::vector<int32_t>> prompts(int num) {
    std::mt19937 rng(11);
    std::vector<std::vector<int32_t>> out;
    const std::vector<int32_t> shared = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
    for (int i = 0; i < num; ++i) {
      std::vector<int32_t> p = i % 4 == 0 ? shared : std::vector<int32_t>{};
      for (int k = 6 + static_cast<int>(rng() % 8); k > 0; --k) p.push_back(static_cast<int32_t>(rng() % 250));
      out.push_back(p);
    }
    return out;
  }

  struct Outcome {
    std::map<std::pair<RequestId, int32_t>, std::vector<int32_t>> tokens;  // by (request, index)
    std::map<std::pair<RequestId, int32_t>, FinishReason> finish;
    std::map<RequestId, RequestStats> stats;
    std::vector<RequestId> ids;
  };

  static Outcome run(Engine& engine, const std::vector<std::vector<int32_t>>& ps, int32_t n = 1) {
    Outcome o;
    for (const auto& p : ps) {
      GenerationRequest r;
      r.prompt_tokens = p;
      r.n = n;
      r.sampling.temperature = 0.0f;
      r.sampling.max_tokens = kMaxTokens;
      r.sampling.ignore_eos = true;
      r.on_event = [&o](const TokenEvent& ev) {
        if (ev.token >= 0) o.tokens[{ev.id, ev.index}].push_back(ev.token);
        if (ev.finish != FinishReason::None) {
          o.finish[{ev.id, ev.index}] = ev.finish;
          o.stats[ev.id] = ev.stats;
        }
      };
      auto id = engine.submit(std::move(r));
      EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error());
      if (id.ok()) o.ids.push_back(*id);
    }
    engine.run_until_idle();
    return o;
  }

  // Tokens in submission order, to compare runs whose request ids differ.
  static std::vector<std::vector<int32_t>> in_order(const Outcome& o, int32_t index = 0) {
    std::vector<std::vector<int32_t>> out;
    for (RequestId id : o.ids) out.push_back(o.tokens.at({id, index}));
    return out;
  }

  static const std::vector<std::vector<int32_t>>& reference() {
    static std::vector<std::vector<int32_t>> ref;
    if (ref.empty()) {
      auto engine = Engine::create(config());
      ref = in_order(run(**engine, prompts(256)));
    }
    return ref;
  }

  static std::string path_;
};
std::string Batching::path_;

TEST_F(Batching, EveryRequestFinishesWithItsTokens) {
  const auto& ref = reference();
  ASSERT_EQ(ref.size(), 256u);
  for (const auto& t : ref) EXPECT_EQ(static_cast<int32_t>(t.size()), kMaxTokens);
}

// 256 requests on a pool that fits about 8 at a time: preemption happens,
// nothing is lost, tokens are identical, and no block leaks.
TEST_F(Batching, PreemptionByRecomputeOrSwapKeepsTokens) {
  for (const PreemptionMode mode : {PreemptionMode::Recompute, PreemptionMode::Swap}) {
    EngineConfig c = config();
    c.num_blocks = 48;  // a request needs up to (13 + 12) / 4 = 7 blocks
    c.preemption = mode;
    c.swap_space_bytes = 1 << 20;
    auto engine = Engine::create(c);
    ASSERT_TRUE(engine.ok()) << engine.error();
    const Outcome o = run(**engine, prompts(256));
    EXPECT_EQ(in_order(o), reference()) << preemption_mode_name(mode);
    for (const auto& [key, reason] : o.finish) EXPECT_EQ(reason, FinishReason::Length);
    const KvStats kv = (*engine)->kv_stats();
    EXPECT_EQ(kv.num_used_blocks, 0) << "leaked blocks";
    EXPECT_EQ(kv.num_used_swap_blocks, 0) << "leaked swap blocks";
    int32_t preemptions = 0;
    for (const auto& [id, st] : o.stats) preemptions += st.num_preemptions;
    EXPECT_GT(preemptions, 0) << "the budget should force preemption (" << preemption_mode_name(mode) << ")";
    if (mode == PreemptionMode::Swap) {
      EXPECT_GT(kv.num_swapped_out_blocks, 0);
    }
  }
}

TEST_F(Batching, ContiguousStaticAndSmallBudgetsKeepTokens) {
  struct Variant {
    const char* name;
    bool paged;
    SchedulingPolicy policy;
    int32_t max_seqs, max_batched_tokens, block_size;
  };
  for (const Variant v : {Variant{"contiguous", false, SchedulingPolicy::Continuous, 256, 256, 4},
                          Variant{"static", true, SchedulingPolicy::Static, 16, 256, 4},
                          Variant{"static contiguous", false, SchedulingPolicy::Static, 16, 64, 4},
                          Variant{"chunks of 5, 3 seqs, block 1", true, SchedulingPolicy::Continuous, 3, 5, 1},
                          Variant{"block 2048", true, SchedulingPolicy::Continuous, 8, 256, 2048}}) {
    EngineConfig c = config();
    c.paged = v.paged;
    c.policy = v.policy;
    c.max_seqs = v.max_seqs;
    c.max_batched_tokens = v.max_batched_tokens;
    c.block_size = v.block_size;
    c.num_blocks = v.block_size == 2048 ? 16 : 4096;
    auto engine = Engine::create(c);
    ASSERT_TRUE(engine.ok()) << engine.error();
    EXPECT_EQ(in_order(run(**engine, prompts(64))),
              std::vector<std::vector<int32_t>>(reference().begin(), reference().begin() + 64))
        << v.name;
    EXPECT_EQ((*engine)->kv_stats().num_used_blocks, 0) << v.name;
  }
}

TEST_F(Batching, PrefixCacheHitsGiveTheSameTokens) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  const auto ps = prompts(64);
  const Outcome first = run(**engine, ps);
  const Outcome second = run(**engine, ps);  // every full block now cached
  EXPECT_EQ(in_order(first), in_order(second));
  int32_t cached = 0;
  for (RequestId id : second.ids) cached += second.stats.at(id).num_cached_prompt_tokens;
  EXPECT_GT(cached, 64 * 4) << "the second pass should hit the cache";
  EXPECT_GT((*engine)->kv_stats().num_prefix_hit_tokens, 0);

  EngineConfig off = config();
  off.prefix_caching = false;
  auto cold = Engine::create(off);
  EXPECT_EQ(in_order(run(**cold, ps)), in_order(first));
  EXPECT_EQ((*cold)->kv_stats().num_prefix_hit_tokens, 0);
}

TEST_F(Batching, ParallelSamplingSharesThePromptAndCopiesOnWrite) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  const auto ps = prompts(8);
  const Outcome o = run(**engine, ps, /*n=*/4);
  for (int32_t index = 0; index < 4; ++index) {
    EXPECT_EQ(in_order(o, index), std::vector<std::vector<int32_t>>(reference().begin(), reference().begin() + 8))
        << "greedy completion " << index;
  }
  EXPECT_GT((*engine)->kv_stats().num_copy_on_writes, 0);
  EXPECT_EQ((*engine)->kv_stats().num_used_blocks, 0);
}

// max_seqs bounds the sequences a step runs, a request's n > 1 completions
// included: they fork from it at its first token, so admission counts them
// from the start (16 completions of n = 16 once ran under max_seqs = 2). A
// request of more completions than max_seqs is refused with the setting named.
TEST_F(Batching, ParallelSamplingStaysWithinMaxSeqs) {
  EngineConfig c = config();
  c.max_seqs = 4;
  c.record_snapshots = true;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok());
  GenerationRequest too_many;
  too_many.prompt_tokens = prompts(1)[0];
  too_many.n = 5;
  const auto refused = (*engine)->submit(std::move(too_many));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("n = 5 needs as many sequences at once, more than max_seqs = 4"), std::string::npos)
      << refused.error();

  const auto ps = prompts(6);
  Outcome o;
  for (const auto& p : ps) {
    GenerationRequest r;
    r.prompt_tokens = p;
    r.n = 3;
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = kMaxTokens;
    r.sampling.ignore_eos = true;
    r.on_event = [&o](const TokenEvent& ev) {
      if (ev.token >= 0) o.tokens[{ev.id, ev.index}].push_back(ev.token);
    };
    o.ids.push_back(*(*engine)->submit(std::move(r)));
  }
  int32_t most = 0;
  while ((*engine)->has_work()) {
    (*engine)->step();
    most = std::max(most, (*engine)->snapshot()->last_step.num_seqs);
  }
  EXPECT_LE(most, 4);
  EXPECT_EQ(most, 3) << "one request's three completions at a time: a second would make six";
  for (int32_t index = 0; index < 3; ++index) {
    EXPECT_EQ(in_order(o, index), std::vector<std::vector<int32_t>>(reference().begin(), reference().begin() + 6))
        << "greedy completion " << index;
  }
}

// Choice i of n draws with seed + i; a seed of 2^64 - 1 (a client's -1)
// made choice 1's wrap to 0, which the engine reads as "random", so that
// choice differed on every run. It now draws with the stand-in for 0.
TEST_F(Batching, ASiblingSeedThatWrapsToZeroStaysReproducible) {
  auto run_once = [&] {
    auto engine = Engine::create(config());
    EXPECT_TRUE(engine.ok());
    std::map<int32_t, std::vector<int32_t>> tokens;
    std::map<int32_t, uint64_t> seeds;
    GenerationRequest r;
    r.prompt_tokens = prompts(1)[0];
    r.n = 3;
    r.sampling.temperature = 1.0f;
    r.sampling.top_k = 0;
    r.sampling.top_p = 1.0f;
    r.sampling.min_p = 0.0f;
    r.sampling.seed = ~uint64_t{0};
    r.sampling.max_tokens = kMaxTokens;
    r.sampling.ignore_eos = true;
    r.on_event = [&](const TokenEvent& ev) {
      if (ev.token >= 0) tokens[ev.index].push_back(ev.token);
      if (ev.finish != FinishReason::None) seeds[ev.index] = ev.stats.seed;
    };
    EXPECT_TRUE((*engine)->submit(std::move(r)).ok());
    (*engine)->run_until_idle();
    return std::pair{tokens, seeds};
  };
  const auto [first, first_seeds] = run_once();
  const auto [second, second_seeds] = run_once();
  EXPECT_EQ(first_seeds.at(0), ~uint64_t{0});
  EXPECT_EQ(first_seeds.at(1), kSeedStandingForZero);
  EXPECT_EQ(first_seeds.at(2), 1u);
  EXPECT_EQ(first, second);
}

TEST_F(Batching, CancelFreesEverything) {
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  std::map<RequestId, FinishReason> finish;
  std::vector<RequestId> ids;
  for (const auto& p : prompts(16)) {
    GenerationRequest r;
    r.prompt_tokens = p;
    r.n = 2;
    r.sampling.max_tokens = 100;
    r.sampling.ignore_eos = true;
    r.on_event = [&](const TokenEvent& ev) {
      if (ev.finish != FinishReason::None) finish[ev.id] = ev.finish;
    };
    ids.push_back(*(*engine)->submit(std::move(r)));
  }
  for (int i = 0; i < 3; ++i) (*engine)->step();
  for (RequestId id : ids) (*engine)->cancel(id);
  (*engine)->run_until_idle();
  for (RequestId id : ids) EXPECT_EQ(finish[id], FinishReason::Cancelled);
  EXPECT_EQ((*engine)->kv_stats().num_used_blocks, 0);
  EXPECT_FALSE((*engine)->has_work());
}

// The snapshot agrees with itself: a used block's reference count equals the
// number of tables holding it, free blocks are unowned, and a block's owners
// are the requests whose (unswapped) tables hold it, each once (a request's
// two completions share their prompt's blocks), in the sequences' order.
TEST_F(Batching, SnapshotIsConsistent) {
  EngineConfig c = config();
  c.num_blocks = 64;
  c.record_snapshots = true;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok());
  for (const auto& p : prompts(24)) {
    GenerationRequest r;
    r.prompt_tokens = p;
    r.n = 2;
    r.sampling.max_tokens = kMaxTokens;
    r.sampling.ignore_eos = true;
    ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  }
  int checked = 0;
  while ((*engine)->has_work()) {
    (*engine)->step();
    const auto snap = (*engine)->snapshot();
    std::vector<int32_t> holders(snap->blocks.size(), 0);
    std::vector<std::vector<RequestId>> owners(snap->blocks.size());
    for (const SequenceSnapshot& s : snap->sequences) {
      if (s.state == SequenceState::Swapped) continue;
      EXPECT_LE(s.num_computed_tokens, static_cast<int32_t>(s.block_table.size()) * snap->block_size);
      for (int32_t b : s.block_table) {
        ++holders[static_cast<size_t>(b)];
        auto& o = owners[static_cast<size_t>(b)];
        if (std::find(o.begin(), o.end(), s.id) == o.end()) o.push_back(s.id);
      }
    }
    for (size_t b = 0; b < snap->blocks.size(); ++b) {
      const BlockSnapshot& bs = snap->blocks[b];
      ASSERT_EQ(bs.ref_count, holders[b]) << "block " << b << " step " << snap->step;
      EXPECT_EQ(bs.state == BlockState::Used, bs.ref_count > 0);
      EXPECT_EQ(bs.owners_end > bs.owners_begin, bs.ref_count > 0);
      const std::vector<RequestId> listed(snap->block_owners.begin() + bs.owners_begin,
                                          snap->block_owners.begin() + bs.owners_end);
      EXPECT_EQ(listed, owners[b]) << "block " << b << " step " << snap->step;
      EXPECT_LE(bs.fill, snap->block_size);
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// A snapshot without a list of recent steps (made by hand) reports its last
// step alone.
TEST(SnapshotSteps, AnEmptyListReportsTheLastStep) {
  EngineSnapshot snap;
  snap.last_step.step = 41;
  ASSERT_EQ(snap.steps_reported().size(), 1u);
  EXPECT_EQ(snap.steps_reported().front().step, 41u);
  snap.recent_steps.resize(3);
  EXPECT_EQ(snap.steps_reported().data(), snap.recent_steps.data());
}

// A viewer that samples snapshots now and then still gets every step: each
// snapshot lists the steps since the previous one, in order, ending with
// last_step; with record_snapshots each lists exactly its own step.
TEST_F(Batching, SnapshotsListEveryStepSinceThePrevious) {
  for (bool record : {false, true}) {
    EngineConfig c = config();
    c.record_snapshots = record;
    auto engine = Engine::create(c);
    ASSERT_TRUE(engine.ok());
    for (const auto& p : prompts(6)) {
      GenerationRequest r;
      r.prompt_tokens = p;
      r.sampling.max_tokens = kMaxTokens;
      ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
    }
    uint64_t next_step = 0;
    int64_t tokens = 0, expected_tokens = 0;
    for (int round = 0; (*engine)->has_work(); ++round) {
      const int steps = 1 + round % 4;
      for (int i = 0; i < steps && (*engine)->has_work(); ++i) {
        (*engine)->step();
        const StepStats st = (*engine)->last_step_stats();
        expected_tokens += st.num_prefill_tokens + st.num_decode_tokens;
      }
      const auto snap = (*engine)->snapshot();
      ASSERT_FALSE(snap->recent_steps.empty());
      if (record) {
        ASSERT_EQ(snap->recent_steps.size(), 1u);
        next_step = snap->recent_steps.front().step;  // earlier ones went to unseen snapshots
      }
      for (const StepStats& st : snap->recent_steps) {
        EXPECT_EQ(st.step, next_step++);
        tokens += st.num_prefill_tokens + st.num_decode_tokens;
      }
      EXPECT_EQ(snap->recent_steps.back().step, snap->last_step.step);
      EXPECT_EQ(snap->step, snap->last_step.step + 1);
      EXPECT_EQ(snap->steps_reported().size(), snap->recent_steps.size());
    }
    if (!record) {
      EXPECT_EQ(tokens, expected_tokens);
    }
    // Asked again with no step in between: the same snapshot object, so a
    // second viewer does not take an empty step list from the first.
    EXPECT_EQ((*engine)->snapshot().get(), (*engine)->snapshot().get());
  }
}

}  // namespace
}  // namespace kvscope
