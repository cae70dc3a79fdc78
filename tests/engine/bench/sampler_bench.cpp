// What drawing the next token costs on the host, at SmolLM2's vocabulary
// (49,152) and Gemma 3's (262,144):
//   BM_Greedy/<vocab>/<copy>  one greedy draw; copy 0: no penalty, so the row
//                             is read in place (vectorised sanitise + max +
//                             first match); copy 1: a repetition penalty, so
//                             the row is copied and penalised first (what
//                             every greedy draw cost before the in-place path).
//   BM_Draws/<vocab>/<greedy>/<threads>
//                             32 rows drawn the way the CPU backend draws
//                             StepBatch::draws (runtime/token_draw.h), on 1 or
//                             2 threads; greedy 0: T 0.8, top-k 40, top-p 0.95,
//                             min-p 0.05 with a penalty window of 64 tokens.
// Every iteration draws from rows it has not seen in its previous iteration
// (8 sets of random rows in turn), so no cache keeps a result between draws
// beyond what a real step would see.
//   build/tests/engine/bench/sampler_bench --benchmark_repetitions=5 --benchmark_format=json
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/bench/cpu_context.h"
#include "kernels/cpu/thread_pool.h"
#include "runtime/sampler.h"
#include "runtime/token_draw.h"

namespace kvscope {
namespace {

constexpr int kSets = 8;
constexpr int32_t kRows = 32;

const std::vector<float>& random_rows(int32_t vocab) {
  static std::vector<float> rows49k, rows262k;
  std::vector<float>& rows = vocab == 49152 ? rows49k : rows262k;
  if (rows.empty()) {
    std::mt19937 rng(3);
    std::normal_distribution<float> logit(0.0f, 3.0f);
    rows.resize(static_cast<size_t>(kSets) * kRows * vocab);
    for (float& l : rows) l = logit(rng);
  }
  return rows;
}

void BM_Greedy(benchmark::State& state) {
  const auto vocab = static_cast<int32_t>(state.range(0));
  const bool copy = state.range(1) != 0;
  SamplingParams params;
  params.temperature = 0.0f;
  params.repetition_penalty = copy ? 1.1f : 1.0f;
  Sampler sampler(params);
  const std::vector<int32_t> recent = {17};
  const std::vector<float>& rows = random_rows(vocab);
  int64_t i = 0;
  for (auto _ : state) {
    const float* row = rows.data() + static_cast<size_t>(i++ % (kSets * kRows)) * vocab;
    benchmark::DoNotOptimize(sampler.sample(row, vocab, recent));
  }
  state.counters["us_per_draw"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 1e-6, benchmark::Counter::kIsRate |
                                                                             benchmark::Counter::kInvert);
}
BENCHMARK(BM_Greedy)->ArgNames({"vocab", "copy"})->ArgsProduct({{49152, 262144}, {0, 1}})->UseRealTime();

void BM_Draws(benchmark::State& state) {
  const auto vocab = static_cast<int32_t>(state.range(0));
  const bool greedy = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  SamplingParams params;  // the defaults: T 0.8, top-k 40, top-p 0.95, min-p 0.05
  params.temperature = greedy ? 0.0f : 0.8f;
  params.repetition_penalty = greedy ? 1.0f : 1.1f;
  std::vector<int32_t> recent;
  for (int k = 0; k < 64; ++k) recent.push_back((k * 7919) % vocab);
  StepBatch batch;
  batch.clear();
  for (int32_t r = 0; r < kRows; ++r) batch.logits_rows.push_back(r);
  for (int32_t r = 0; r < kRows; ++r) append_token_draw(batch, r, params, recent, vocab, (r + 0.5) / kRows);
  ThreadPool pool(threads);
  const std::vector<float>& rows = random_rows(vocab);
  std::vector<int32_t> drawn;
  int64_t set = 0;
  for (auto _ : state) {
    const float* logits = rows.data() + static_cast<size_t>(set++ % kSets) * kRows * vocab;
    draw_tokens_on_host(batch, logits, vocab, drawn, &pool);
    benchmark::DoNotOptimize(drawn.data());
  }
  state.counters["us_per_step"] = benchmark::Counter(static_cast<double>(state.iterations()) * 1e-6,
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Draws)
    ->ArgNames({"vocab", "greedy", "threads"})
    ->ArgsProduct({{49152, 262144}, {1, 0}, {1, 2}})
    ->UseRealTime();

}  // namespace
}  // namespace kvscope

int main(int argc, char** argv) { return kvscope::bench::run_benchmarks(argc, argv); }
