// End to end, the default model: decode steps of N requests that share a
// 2,000-token system prompt (all prefilled, the prompt's blocks shared through
// the prefix cache), cascade off vs on. One iteration is one Engine::step()
// (N decode rows); counters: tok_per_s (N / step time), attention_ms (the
// step's attention kernels, StepStats::attention_time_s), cascade_seqs (the
// sequences in a shared pass, 0 when off). KV cache f32 (kv_type 0) or f16 (1).
//   build/tests/engine/bench/cascade_engine_bench --benchmark_repetitions=3 --benchmark_format=json
// The context block names the CPU (tests/kernels/bench/cpu_context.h).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>

#include "kernels/bench/cpu_context.h"
#include "kvscope/engine.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

constexpr int32_t kSystemPromptTokens = 2000;

GenerationRequest request(std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerationRequest r;
  r.prompt_tokens = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = max_tokens;
  return r;
}

// An engine with num_requests requests decoding after a shared system prompt.
std::unique_ptr<Engine> decoding_engine(int32_t num_requests, CascadeMode cascade, KvCacheType kv_type) {
  EngineConfig c;
  c.model_path = test::default_model_path();
  c.num_threads = 2;
  c.max_seqs = 64;
  c.max_batched_tokens = 2048;
  c.kv_budget_bytes = 2ll << 30;
  c.cascade = cascade;
  c.kv_cache_type = kv_type;
  auto engine = Engine::create(c);
  if (!engine.ok()) return nullptr;
  Engine& e = **engine;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> ids(1000, 20000);
  std::vector<int32_t> system;
  for (int32_t i = 0; i < kSystemPromptTokens; ++i) system.push_back(ids(rng));
  // The system prompt once, so that its blocks are in the prefix cache.
  if (!e.submit(request(system, 1)).ok()) return nullptr;
  e.run_until_idle();
  for (int32_t i = 0; i < num_requests; ++i) {
    std::vector<int32_t> prompt = system;
    for (int32_t t = 0; t < 8; ++t) prompt.push_back(ids(rng));
    if (!e.submit(request(std::move(prompt), 4000)).ok()) return nullptr;
  }
  // Prefill (the suffixes) until a step does none.
  do {
    e.step();
  } while (e.last_step_stats().num_prefill_tokens > 0);
  return std::move(engine).value();
}

void BM_SharedPromptDecodeStep(benchmark::State& state) {
  if (test::default_model_path().empty()) {
    state.SkipWithError("default model not found (python3 scripts/fetch_model.py)");
    return;
  }
  const int32_t num_requests = static_cast<int32_t>(state.range(0));
  const CascadeMode cascade = state.range(1) ? CascadeMode::On : CascadeMode::Off;
  const auto kv_type = static_cast<KvCacheType>(state.range(2));
  auto engine = decoding_engine(num_requests, cascade, kv_type);
  if (!engine) {
    state.SkipWithError("engine setup failed");
    return;
  }
  double attention_s = 0;
  int64_t cascade_seqs = 0;
  for (auto _ : state) {
    engine->step();
    attention_s += engine->last_step_stats().attention_time_s;
    cascade_seqs += engine->last_step_stats().num_cascade_seqs;
  }
  const double steps = static_cast<double>(state.iterations());
  state.counters["tok_per_s"] = benchmark::Counter(static_cast<double>(num_requests) * steps,
                                                   benchmark::Counter::kIsRate);
  state.counters["attention_ms"] = 1e3 * attention_s / steps;
  state.counters["cascade_seqs"] = static_cast<double>(cascade_seqs) / steps;
  state.counters["decode_rows"] = engine->last_step_stats().num_decode_tokens;
  state.SetLabel(std::string(cascade == CascadeMode::On ? "cascade on, " : "cascade off, ") +
                 kv_cache_type_name(kv_type));
}
BENCHMARK(BM_SharedPromptDecodeStep)
    ->ArgNames({"requests", "cascade", "kv_type"})
    ->ArgsProduct({{8, 32, 64}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(12);

}  // namespace
}  // namespace kvscope

int main(int argc, char** argv) { return kvscope::bench::run_benchmarks(argc, argv); }
