// Cascade attention through the engine: requests that share a prompt prefix
// (through the prefix cache, or as parallel samples) get a shared pass, the
// snapshot says so, and every logit is bitwise what cascade off gives.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "kvscope/engine.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

struct Recorded {
  std::map<std::pair<RequestId, int32_t>, std::vector<float>> logits;  // (request, index) -> all positions
  int32_t steps_with_cascade = 0;
  int32_t max_group_members = 0;
  int32_t max_shared_tokens = 0;
  int64_t kv_bytes_saved = 0;
  int64_t cascade_seqs = 0;    // summed over steps (StepStats)
  int64_t cascade_events = 0;  // EngineEventType::Cascade in the trace
  bool snapshot_blocks_match = true;
};

// A 200-token prompt computed once (so its blocks are in the prefix cache),
// then 9 requests of it plus a distinct tail, one of them with n = 3.
Recorded run(const std::string& model, CascadeMode mode, int32_t block_size,
             KvCacheType kv_type = KvCacheType::F32) {
  EngineConfig c;
  c.model_path = model;
  c.num_threads = 2;
  c.block_size = block_size;
  c.cascade = mode;
  c.kv_cache_type = kv_type;
  c.record_snapshots = true;
  auto created = Engine::create(c);
  EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
  if (!created.ok()) return {};
  Engine& engine = **created;
  engine.set_tracing(true);
  std::vector<int32_t> prefix;
  for (int32_t i = 0; i < 200; ++i) prefix.push_back(3 + (i * 37) % 250);
  Recorded rec;
  auto submit = [&](std::vector<int32_t> prompt, int32_t n, int32_t max_tokens) {
    GenerationRequest r;
    r.prompt_tokens = std::move(prompt);
    r.n = n;
    r.sampling.temperature = 0.0f;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = max_tokens;
    auto id = std::make_shared<RequestId>(0);
    r.on_logits = [&rec, id](int32_t index, int32_t, const float* logits, int32_t vocab) {
      auto& v = rec.logits[{*id, index}];
      v.insert(v.end(), logits, logits + vocab);
    };
    auto got = engine.submit(std::move(r));
    EXPECT_TRUE(got.ok());
    if (got.ok()) *id = *got;
  };
  submit(prefix, 1, 1);
  engine.run_until_idle();
  for (int32_t i = 0; i < 9; ++i) {
    std::vector<int32_t> p = prefix;
    for (int32_t t = 0; t <= i % 4; ++t) p.push_back(10 + i * 5 + t);
    submit(p, i == 4 ? 3 : 1, 12);
  }
  while (engine.has_work()) {
    engine.step();
    const auto snap = engine.snapshot();
    for (const EngineEvent& e : engine.take_events()) rec.cascade_events += e.type == EngineEventType::Cascade;
    rec.cascade_seqs += engine.last_step_stats().num_cascade_seqs;
    if (!snap || snap->cascade_groups.empty()) continue;
    ++rec.steps_with_cascade;
    rec.kv_bytes_saved += snap->last_step.cascade_kv_bytes_saved;
    EXPECT_EQ(snap->last_step.num_cascade_groups, static_cast<int32_t>(snap->cascade_groups.size()));
    for (const CascadeGroupSnapshot& g : snap->cascade_groups) {
      rec.max_group_members = std::max(rec.max_group_members, static_cast<int32_t>(g.request_ids.size()));
      rec.max_shared_tokens = std::max(rec.max_shared_tokens, g.num_shared_tokens);
      // The blocks read are the prefix blocks of every member's table.
      for (const SequenceSnapshot& s : snap->sequences) {
        for (size_t m = 0; m < g.request_ids.size(); ++m) {
          if (s.id != g.request_ids[m] || s.index != g.indices[m]) continue;
          if (s.block_table.size() < g.blocks.size() ||
              !std::equal(g.blocks.begin(), g.blocks.end(), s.block_table.begin())) {
            rec.snapshot_blocks_match = false;
          }
        }
      }
    }
  }
  return rec;
}

// Six query heads over two KV heads of 24: a shared pass serves a group of heads.
test::TinyModelSpec grouped_heads_spec() {
  test::TinyModelSpec spec;
  spec.heads = 6;
  spec.kv_heads = 2;
  spec.head_dim = 24;
  spec.hidden = 144;
  return spec;
}

TEST(CascadeEngine, SharedPassRunsAndChangesNoBit) {
  const std::string dir = test::tiny_model_temp_path("cascade_engine");
  ASSERT_TRUE(test::write_tiny_gguf(grouped_heads_spec(), dir).ok());
  for (int32_t block_size : {16, 1, 48}) {
    const Recorded off = run(dir, CascadeMode::Off, block_size);
    const Recorded on = run(dir, CascadeMode::On, block_size);
    EXPECT_EQ(off.steps_with_cascade, 0);
    EXPECT_GT(on.steps_with_cascade, 5) << "block size " << block_size;
    EXPECT_GE(on.max_group_members, 9) << "the prefix-cache hits and the parallel samples share the prefix";
    EXPECT_EQ(on.max_shared_tokens, 192) << "200 shared tokens rounded down to whole tiles";
    EXPECT_GT(on.kv_bytes_saved, 0);
    EXPECT_EQ(on.cascade_events, on.cascade_seqs) << "one trace event per sequence in a shared pass";
    EXPECT_TRUE(on.snapshot_blocks_match);
    ASSERT_EQ(off.logits.size(), on.logits.size());
    ASSERT_EQ(off.logits.size(), 12u);  // the first request, 8 singles and 3 samples
    for (const auto& [key, values] : off.logits) {
      const auto it = on.logits.find(key);
      ASSERT_NE(it, on.logits.end());
      ASSERT_EQ(values.size(), it->second.size());
      EXPECT_EQ(0, std::memcmp(values.data(), it->second.data(), values.size() * sizeof(float)))
          << "request " << key.first << "." << key.second << ", block size " << block_size;
    }
  }
  std::filesystem::remove(dir);
}

// The bytes a shared pass did not read are the cache's bytes: a K and a V row
// per position as stored, so half of f32's in f16 for the same passes.
TEST(CascadeEngine, BytesNotReadAreTheCacheTypes) {
  const std::string dir = test::tiny_model_temp_path("cascade_engine_bytes");
  ASSERT_TRUE(test::write_tiny_gguf(grouped_heads_spec(), dir).ok());
  const Recorded f32 = run(dir, CascadeMode::On, 16, KvCacheType::F32);
  const Recorded f16 = run(dir, CascadeMode::On, 16, KvCacheType::F16);
  EXPECT_EQ(f32.steps_with_cascade, f16.steps_with_cascade);
  EXPECT_EQ(f32.cascade_seqs, f16.cascade_seqs);
  EXPECT_GT(f16.kv_bytes_saved, 0);
  EXPECT_EQ(f16.kv_bytes_saved * 2, f32.kv_bytes_saved);
  std::filesystem::remove(dir);
}

}  // namespace
}  // namespace kvscope
