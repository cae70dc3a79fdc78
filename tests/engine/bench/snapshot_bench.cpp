// How much an EngineSnapshot costs at 64 running requests on the default
// model, beside the decode step it would accompany (the inspector takes one
// per step at most). Google Benchmark:
//   build/tests/engine/bench/snapshot_bench --benchmark_repetitions=5 --benchmark_format=json
// Skips (with a message) when the default model is absent. The context block
// names the CPU and the kernels' ISA path (tests/kernels/bench/cpu_context.h).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <string>

#include "kvscope/engine.h"
#include "kernels/bench/cpu_context.h"
#include "support/test_paths.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

// Submits 64 greedy requests of 256 prompt tokens (ids first_id + (0 ..
// id_range - 1)) and steps until every prompt is prefilled and all decode.
void start_64_decoding(Engine& engine, int32_t first_id, int32_t id_range, int32_t max_tokens) {
  for (int i = 0; i < 64; ++i) {
    GenerationRequest r;
    for (int t = 0; t < 256; ++t) r.prompt_tokens.push_back(first_id + (i * 7 + t * 13) % id_range);
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = max_tokens;
    r.sampling.ignore_eos = true;
    (void)engine.submit(std::move(r));
  }
  for (int i = 0; i < 12; ++i) engine.step();  // prefill done, decoding
}

// Times snapshot() alone, each after a new step, so that it must build anew.
void time_fresh_snapshots(benchmark::State& state, Engine& engine) {
  for (auto _ : state) {
    state.PauseTiming();
    engine.step();
    state.ResumeTiming();
    benchmark::DoNotOptimize(engine.snapshot());
  }
}

// 64 requests of 256 prompt tokens, prefilled, decoding.
std::unique_ptr<Engine> busy_engine() {
  EngineConfig c;
  c.model_path = test::default_model_path();
  c.num_threads = 2;
  c.max_seqs = 64;
  c.max_batched_tokens = 2048;
  c.kv_budget_bytes = 2ll << 30;  // all 64 fit: the step measured is pure decode
  auto engine = Engine::create(c);
  if (!engine.ok()) return nullptr;
  start_64_decoding(**engine, 1000, 20000, 4096);
  return std::move(engine).value();
}

void BM_SnapshotAt64Requests(benchmark::State& state) {
  if (test::default_model_path().empty()) {
    state.SkipWithError("default model not found (python3 scripts/fetch_model.py)");
    return;
  }
  auto engine = busy_engine();
  time_fresh_snapshots(state, *engine);
  const auto snap = engine->snapshot();
  state.counters["blocks"] = static_cast<double>(snap->blocks.size());
  state.counters["sequences"] = static_cast<double>(snap->sequences.size());
}
BENCHMARK(BM_SnapshotAt64Requests)->Unit(benchmark::kMillisecond)->Iterations(20);

void BM_DecodeStepAt64Requests(benchmark::State& state) {
  if (test::default_model_path().empty()) {
    state.SkipWithError("default model not found (python3 scripts/fetch_model.py)");
    return;
  }
  auto engine = busy_engine();
  for (auto _ : state) engine->step();
  state.counters["seqs"] = engine->last_step_stats().num_seqs;
}
BENCHMARK(BM_DecodeStepAt64Requests)->Unit(benchmark::kMillisecond)->Iterations(100);

// The snapshot against the pool's size: 64 requests of 256 prompt tokens
// decoding on the random tiny model (256 bytes of K/V a token, so a pool of
// 131,072 blocks fits in this machine's memory as on a GPU with
// gpu_memory_percent set: 97 GB of the default model's K/V on an H200).
void BM_SnapshotOfAPool(benchmark::State& state) {
  const std::string path = test::tiny_model_temp_path("snapshot_bench");
  test::TinyModelSpec spec;
  spec.context_length = 4096;
  if (Status st = test::write_tiny_gguf(spec, path); !st.ok()) {
    state.SkipWithError(st.error().c_str());
    return;
  }
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 1;
  c.max_seqs = 64;
  c.max_batched_tokens = 2048;
  c.num_blocks = static_cast<int32_t>(state.range(0));
  auto engine = Engine::create(c);
  if (!engine.ok()) {
    state.SkipWithError(engine.error().c_str());
    return;
  }
  start_64_decoding(**engine, 3, 250, 2048);
  time_fresh_snapshots(state, **engine);
  state.counters["used_blocks"] = static_cast<double>((*engine)->snapshot()->kv.num_used_blocks);
  std::remove(path.c_str());
}
BENCHMARK(BM_SnapshotOfAPool)->Arg(4096)->Arg(131072)->Unit(benchmark::kMillisecond)->Iterations(50);

}  // namespace
}  // namespace kvscope

// BENCHMARK_MAIN() plus the CPU in the run's context (cpu_context.h).
int main(int argc, char** argv) { return kvscope::bench::run_benchmarks(argc, argv); }
