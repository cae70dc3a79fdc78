// The Backend seam (runtime/backend.h) with the CPU backend, on a tiny random
// model (label `unit`):
//  - CpuBackend::forward is the model runner's, bit for bit (prefill, then
//    decode steps), so wrapping changed no logits;
//  - the KV cache manager's copy-on-write and swap, and a context shift's
//    block copies and key re-rotation, all go through the backend's
//    KvBlockStore: a counting store in front of the CPU pool sees each one,
//    and the bytes moved are the bytes that were there;
//  - the engine's memory report and snapshot come from the backend
//    (device name, pool and swap bytes, the backend and why).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "context_shift.h"
#include "kv/host_kv_pool.h"
#include "kv/kv_cache_manager.h"
#include "kv/prefix_hash.h"
#include "kvscope/engine.h"
#include "model/model_loader.h"
#include "parallel/shard_plan.h"
#include "runtime/cpu_backend.h"
#include "runtime/model_runner.h"
#include "support/tiny_model.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

constexpr int32_t kBlockSize = 4;

struct Tiny {
  std::string path;
  LoadedModel model;
};

const Tiny& tiny() {
  static const Tiny t = [] {
    Tiny t;
    t.path = test::tiny_model_temp_path("backend_seam");
    EXPECT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, t.path).ok());
    auto loaded = load_model(t.path);
    EXPECT_TRUE(loaded.ok()) << loaded.error();
    t.model = std::move(loaded).value();
    return t;
  }();
  return t;
}

KvPoolSpec pool_spec(const ModelConfig& c, int32_t num_blocks, int32_t num_swap_blocks = 0) {
  return KvPoolSpec{.num_layers = c.num_layers, .kv_size = c.kv_size(), .num_blocks = num_blocks,
                    .block_size = kBlockSize, .num_swap_blocks = num_swap_blocks};
}

// Every logit of a prefill of 11 tokens and three decode steps, through `run`.
template <typename Forward>
std::vector<float> run_steps(Forward&& forward, int32_t vocab) {
  const std::vector<int32_t> table = {3, 0, 5, 1};  // out of order on purpose
  auto slot = [&](int32_t pos) { return int64_t{table[static_cast<size_t>(pos / kBlockSize)]} * kBlockSize + pos % kBlockSize; };
  std::vector<int32_t> tokens(11);
  std::vector<int64_t> slots(11);
  for (int32_t i = 0; i < 11; ++i) {
    tokens[static_cast<size_t>(i)] = (i * 37 + 5) % vocab;
    slots[static_cast<size_t>(i)] = slot(i);
  }
  std::vector<float> all, logits;
  StepBatch batch;
  batch.add_sequence(tokens.data(), 11, 0, slots.data(), table, 11);
  EXPECT_TRUE(forward(batch, logits));
  all.insert(all.end(), logits.begin(), logits.end());
  for (int32_t pos = 11; pos < 14; ++pos) {
    const int32_t token = (pos * 13) % vocab;
    const int64_t s = slot(pos);
    batch.clear();
    batch.add_sequence(&token, 1, pos, &s, table, 1);
    EXPECT_TRUE(forward(batch, logits));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

TEST(BackendSeam, CpuBackendForwardIsTheRunnersBitForBit) {
  const auto& weights = tiny().model.weights;
  const ModelConfig& c = weights->config;
  ThreadPool threads(2);

  KvStorage kv(c.num_layers, 8, kBlockSize, c.kv_size());
  ModelRunner runner(weights, kv, threads);
  const std::vector<float> expected = run_steps(
      [&](const StepBatch& b, std::vector<float>& l) { return runner.forward(b, l); }, c.vocab_size);

  auto plan = plan_shards(*weights, 1, false);
  ASSERT_TRUE(plan.ok()) << plan.error();
  auto pool = CpuBackend::make_pool(pool_spec(c, 8), weights);
  ASSERT_TRUE(pool.ok()) << pool.error();
  auto backend = CpuBackend::create(weights, *plan, std::move(pool).value(), threads, {});
  ASSERT_TRUE(backend);
  EXPECT_EQ(backend->kind(), BackendKind::Cpu);
  const std::vector<float> got = run_steps(
      [&](const StepBatch& b, std::vector<float>& l) { return backend->forward(b, l); }, c.vocab_size);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0);

  // A new pool handed over: the runner writes there from then on.
  auto next = backend->make_kv_pool(pool_spec(c, 8));
  ASSERT_TRUE(next.ok()) << next.error();
  const KvBlockStore* next_pool = next->get();
  backend->use_kv_pool(std::move(next).value());
  EXPECT_EQ(&backend->kv_blocks(), next_pool);
  const std::vector<float> again = run_steps(
      [&](const StepBatch& b, std::vector<float>& l) { return backend->forward(b, l); }, c.vocab_size);
  EXPECT_EQ(std::memcmp(again.data(), expected.data(), again.size() * sizeof(float)), 0);

  const BackendMemory memory = backend->memory();
  EXPECT_EQ(memory.device_name.rfind("CPU (", 0), 0u) << memory.device_name;
  EXPECT_EQ(memory.weight_bytes, weights->matrix_bytes());
  EXPECT_EQ(memory.kv_pool_bytes, KvStorage::bytes_per_block(c.num_layers, kBlockSize, c.kv_size()) * 8);
  EXPECT_EQ(memory.swap_bytes, 0u);
  EXPECT_GT(memory.workspace_bytes, 0u);
}

// Counts every block operation and passes it on to the CPU pool.
class CountingStore final : public KvBlockStore {
 public:
  explicit CountingStore(HostKvPool& inner) : inner_(inner) {}
  int32_t num_blocks() const override { return inner_.num_blocks(); }
  int32_t num_swap_blocks() const override { return inner_.num_swap_blocks(); }
  size_t pool_bytes() const override { return inner_.pool_bytes(); }
  size_t swap_bytes() const override { return inner_.swap_bytes(); }
  void copy_block(int32_t src, int32_t dst) override {
    ++num_copies;
    inner_.copy_block(src, dst);
  }
  void swap_out_block(int32_t block, int32_t swap_block) override {
    ++num_swap_outs;
    inner_.swap_out_block(block, swap_block);
  }
  void swap_in_block(int32_t swap_block, int32_t block) override {
    ++num_swap_ins;
    inner_.swap_in_block(swap_block, block);
  }
  void rerotate_keys(int32_t block, int32_t num_rows, int32_t delta) override {
    ++num_rerotations;
    rerotated_rows += num_rows;
    inner_.rerotate_keys(block, num_rows, delta);
  }
  int32_t num_copies = 0, num_swap_outs = 0, num_swap_ins = 0, num_rerotations = 0, rerotated_rows = 0;

 private:
  HostKvPool& inner_;
};

// The K and V bytes of one block, every layer.
std::vector<uint8_t> block_bytes(const KvStorage& s, int32_t block) {
  std::vector<uint8_t> out;
  for (int32_t l = 0; l < s.num_layers(); ++l) {
    for (int32_t i = 0; i < s.block_size(); ++i) {
      const int64_t slot = int64_t{block} * s.block_size() + i;
      out.insert(out.end(), s.k(l, slot), s.k(l, slot) + s.row_bytes());
      out.insert(out.end(), s.v(l, slot), s.v(l, slot) + s.row_bytes());
    }
  }
  return out;
}

TEST(BackendSeam, KvManagerAndContextShiftMoveBlocksThroughTheStore) {
  const auto& weights = tiny().model.weights;
  const ModelConfig& c = weights->config;
  HostKvPool pool(pool_spec(c, 16, 8), weights);
  CountingStore store(pool);
  EventLog events;
  KvCacheConfig cfg;
  cfg.block_size = kBlockSize;
  cfg.num_blocks = 16;
  cfg.num_swap_blocks = 8;
  KvCacheManager kv(cfg, store, events);
  auto tokenizer = create_tokenizer(tiny().model.vocab);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error();
  std::vector<int32_t> prompt(14);
  std::iota(prompt.begin(), prompt.end(), 20);
  Sequence s(1, 0, prompt, SamplingParams{}, {}, **tokenizer, kBlockSize);
  const uint64_t seed = prefix_hash_seed("");

  // Prefill 14 tokens (4 blocks, the last half full) with recognisable K/V.
  ASSERT_TRUE(kv.can_write(s.table, 0, 14));
  kv.prepare_write(s.table, 0, 14, s.id, 0);
  std::vector<float> row(static_cast<size_t>(c.kv_size()));
  for (int32_t pos = 0; pos < 14; ++pos) {
    for (int32_t l = 0; l < c.num_layers; ++l) {
      for (size_t e = 0; e < row.size(); ++e) row[e] = static_cast<float>(pos * 1000 + l * 100) + static_cast<float>(e);
      pool.storage().store(l, s.table.slot(pos), row.data(), row.data());
    }
  }
  kv.commit(s.table, s.tokens, 0, 14, seed);
  s.num_computed = 14;

  // Copy-on-write: a fork shares every block; writing slot 14 copies the last one.
  BlockTable sibling(kBlockSize);
  kv.fork(s.table, sibling);
  const int32_t shared_last = s.table.block(3);
  ASSERT_TRUE(kv.can_write(s.table, 14, 15));
  kv.prepare_write(s.table, 14, 15, s.id, 0);
  EXPECT_EQ(store.num_copies, 1);
  EXPECT_NE(s.table.block(3), shared_last);
  EXPECT_EQ(block_bytes(pool.storage(), s.table.block(3)), block_bytes(pool.storage(), shared_last));

  // Swap: the sibling's 4 blocks go out to host swap and come back with their bytes.
  std::vector<std::vector<uint8_t>> before;
  for (int32_t b : sibling.blocks()) before.push_back(block_bytes(pool.storage(), b));
  ASSERT_TRUE(kv.can_swap_out(sibling));
  kv.swap_out(sibling, 2, 0);
  EXPECT_EQ(store.num_swap_outs, 4);
  ASSERT_TRUE(kv.can_swap_in(sibling));
  kv.swap_in(sibling, 2, 0);
  EXPECT_EQ(store.num_swap_ins, 4);
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(block_bytes(pool.storage(), sibling.block(static_cast<int32_t>(i))), before[i]) << "block " << i;
  }

  // Context shift: keep block 0, drop block 1; blocks 2 and 3 move down and
  // their keys turn by -4 positions. Another fork shares block 2, so it is
  // copied first (the fork keeps the original, unrotated).
  BlockTable reader(kBlockSize);
  kv.fork(s.table, reader);
  s.num_computed = 14;  // slot 14 was prepared, never written: shift what is computed
  const int32_t copies_before = store.num_copies;
  const std::vector<uint8_t> kept = block_bytes(pool.storage(), s.table.block(0));
  const std::vector<uint8_t> reader_block2 = block_bytes(pool.storage(), reader.block(2));
  const ContextShiftPlan plan{.keep_blocks = 1, .drop_blocks = 1};
  ASSERT_EQ(shift_context(s, plan, kv, store), kBlockSize);
  EXPECT_EQ(store.num_copies - copies_before, 2) << "the moved blocks are shared with the reader";
  EXPECT_EQ(store.num_rerotations, 2);                 // the moved blocks: now table blocks 1 and 2
  EXPECT_EQ(store.rerotated_rows, 10 - kBlockSize);    // 10 computed tokens after the drop, 4 of them kept
  EXPECT_EQ(block_bytes(pool.storage(), s.table.block(0)), kept);
  EXPECT_EQ(block_bytes(pool.storage(), reader.block(2)), reader_block2) << "the reader's block was rotated";
  EXPECT_NE(block_bytes(pool.storage(), s.table.block(1)), reader_block2) << "the moved copy was not rotated";
  kv.release(s.table);
  kv.release(sibling);
  kv.release(reader);
  EXPECT_EQ(kv.pool().num_used_blocks(), 0);
}

std::string write_engine_model() {
  const std::string path = test::tiny_model_temp_path("backend_seam_engine");
  EXPECT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path).ok());
  return path;
}

TEST(BackendSeam, EngineReportsTheBackendsMemoryAndWhy) {
  EngineConfig c;
  c.model_path = write_engine_model();
  c.num_threads = 2;
  c.num_blocks = 32;
  c.block_size = 8;
  c.preemption = PreemptionMode::Swap;
  c.swap_space_bytes = 1 << 20;
  c.record_snapshots = true;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.error();
  const ModelInfo& info = (*engine)->model_info();
  EXPECT_EQ(info.backend, "cpu");
  EXPECT_EQ(info.backend_reason.rfind("CPU: ", 0), 0u) << info.backend_reason;
  EXPECT_EQ(info.device_name.rfind("CPU (", 0), 0u) << info.device_name;
  EXPECT_EQ(info.kv_pool_bytes, size_t{32} * 8 * info.kv_bytes_per_token);
  EXPECT_GT(info.swap_pool_bytes, 0u);
  EXPECT_LE(info.swap_pool_bytes, size_t{1} << 20);
  (*engine)->step();
  EXPECT_EQ((*engine)->snapshot()->backend_reason, info.backend_reason);
}

}  // namespace
}  // namespace kvscope
