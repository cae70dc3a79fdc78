// cascade_bench: the attention of one decode step on SmolLM2-135M's shapes
// (30 layers, 9 query / 3 KV heads of 64, block size 16, f32 or f16 K/V) for N
// sequences sharing a prefix (2,000 tokens; shorter ones for the Auto rule),
// flat vs cascade (the shared pass of
// paged_attention). Every layer has its own K/V pool, as in the engine, so a
// step streams ~N x 92 MB (flat) or ~92 MB (cascade) of prefix K/V and
// nothing is served from a cache warmed by the previous iteration's layer.
//   ./cascade_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Time: one decode step, all layers. Counters: prefix_GB_per_step (the
// prefix K/V the flat pass would load), and the threads used.
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/bench/cpu_context.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/thread_pool.h"

namespace kvscope {
namespace {

constexpr int32_t kLayers = 30, kHeads = 9, kKvHeads = 3, kHeadDim = 64, kBlockSize = 16;
constexpr int32_t kKvRow = kKvHeads * kHeadDim;

// One decode step's batch: sequence i holds the prefix's blocks, then its own
// 3-5 blocks of suffix; its one query row is its last position.
struct DecodeStep {
  int32_t num_blocks = 0;
  KvCacheType type;
  std::vector<std::vector<uint8_t>> k, v;  // [layer] pool [num_blocks][block_size][kv_row] in `type`
  std::vector<int32_t> query_start{0}, positions, block_table_start{0}, block_ids;
  std::vector<float> q;
  std::vector<int32_t> prefix_len, seq_start{0}, seqs;  // one cascade group of every sequence

  DecodeStep(int32_t num_seqs, int32_t prefix, KvCacheType type_) : type(type_) {
    std::mt19937 rng(42);
    const int32_t prefix_blocks = (prefix + kBlockSize - 1) / kBlockSize;
    std::vector<int32_t> prefix_table(static_cast<size_t>(prefix_blocks));
    std::iota(prefix_table.begin(), prefix_table.end(), 0);
    num_blocks = prefix_blocks;
    for (int32_t s = 0; s < num_seqs; ++s) {
      const int32_t length = prefix + 40 + (s * 7) % 32;
      std::vector<int32_t> table = prefix_table;
      while (static_cast<int32_t>(table.size()) * kBlockSize < length) table.push_back(num_blocks++);
      block_ids.insert(block_ids.end(), table.begin(), table.end());
      block_table_start.push_back(static_cast<int32_t>(block_ids.size()));
      positions.push_back(length - 1);
      query_start.push_back(s + 1);
      seqs.push_back(s);
    }
    seq_start.push_back(num_seqs);
    prefix_len.push_back(prefix / kAttentionTile * kAttentionTile);
    std::normal_distribution<float> nd;
    const size_t row_bytes = kv_row_bytes(type, kKvRow);
    const size_t num_slots = static_cast<size_t>(num_blocks) * kBlockSize;
    float row[kKvRow];
    for (int32_t l = 0; l < kLayers; ++l) {
      for (auto* pool : {&k, &v}) {
        pool->emplace_back(num_slots * row_bytes);
        for (size_t slot = 0; slot < num_slots; ++slot) {
          for (float& x : row) x = nd(rng);
          store_kv_row(type, row, kKvRow, pool->back().data() + slot * row_bytes);
        }
      }
    }
    q.resize(static_cast<size_t>(num_seqs) * kHeads * kHeadDim);
    for (float& x : q) x = nd(rng);
  }
};

void BM_DecodeStepAttention(benchmark::State& state) {
  const int32_t num_seqs = static_cast<int32_t>(state.range(0));
  const bool cascade_on = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  const int32_t prefix = static_cast<int32_t>(state.range(3));
  const auto type = static_cast<KvCacheType>(state.range(4));
  static std::unique_ptr<DecodeStep> step;
  static std::tuple<int32_t, int32_t, KvCacheType> built{0, 0, KvCacheType::F32};
  if (!step || built != std::make_tuple(num_seqs, prefix, type)) {
    step.reset();
    step = std::make_unique<DecodeStep>(num_seqs, prefix, type);
    built = {num_seqs, prefix, type};
  }
  ThreadPool pool(threads);
  const AttentionShape shape{kHeads, kKvHeads, kHeadDim, 1.0f / std::sqrt(float(kHeadDim)), 0};
  const PagedAttentionBatch batch{num_seqs, step->query_start.data(), step->positions.data(),
                                  step->block_table_start.data(), step->block_ids.data()};
  const CascadeGroups groups = cascade_on ? CascadeGroups{1, step->prefix_len.data(), step->seq_start.data(),
                                                          step->seqs.data()}
                                          : CascadeGroups{};
  std::vector<float> out(step->q.size());
  for (auto _ : state) {
    for (int32_t l = 0; l < kLayers; ++l) {
      const PagedKvLayer kv{step->k[static_cast<size_t>(l)].data(), step->v[static_cast<size_t>(l)].data(), kBlockSize,
                            type};
      paged_attention(shape, kv, batch, step->q.data(), out.data(), pool, groups);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["prefix_GB_per_step"] =
      static_cast<double>(num_seqs) * prefix * kv_row_bytes(type, kKvRow) * 2 * kLayers / 1e9;
  state.counters["threads"] = threads;
  state.SetLabel(std::string(cascade_on ? "cascade " : "flat ") + kv_cache_type_name(type));
}

// The case: a 2,000-token system prompt, f32 (0) and f16 (1) caches.
BENCHMARK(BM_DecodeStepAttention)
    ->ArgNames({"seqs", "cascade", "threads", "prefix", "kv_type"})
    ->ArgsProduct({{8, 32, 64}, {0, 1}, {1, 2}, {2000}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// Where cascade starts to pay (CascadeMode::Auto's rule): few sequences, short prefixes.
BENCHMARK(BM_DecodeStepAttention)
    ->ArgNames({"seqs", "cascade", "threads", "prefix", "kv_type"})
    ->ArgsProduct({{2, 4, 8}, {0, 1}, {1, 2}, {32, 128, 512}, {0}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kvscope

int main(int argc, char** argv) { return kvscope::bench::run_benchmarks(argc, argv); }
