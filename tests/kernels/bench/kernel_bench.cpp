// kernel_bench: matmul throughput for SmolLM2-135M's shapes (Q4_1 layers,
// Q8_0 output head) at 1 and 2 threads, decode (1 token) to prefill (128),
// plus the reference for comparison. Counter GMAC/s = rows * cols * tokens / time.
//   ./kernel_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// KVSCOPE_CPU=avx2 measures the AVX2 path.
#include <benchmark/benchmark.h>

#include <memory>

#include "kernels/cpu/matmul.h"
#include "kernels/reference/matmul.h"
#include "kernels/kernel_test_util.h"

namespace kvscope {
namespace {

struct Shape {
  TensorType type;
  int64_t rows;
  int64_t cols;
};

const Shape kShapes[] = {
    {TensorType::Q4_1, 576, 576},  {TensorType::Q4_1, 192, 576},   {TensorType::Q4_1, 1536, 576},
    {TensorType::Q4_1, 576, 1536}, {TensorType::Q8_0, 49152, 576}, {TensorType::Q4_K, 1536, 768},
    {TensorType::Q6_K, 1536, 768}, {TensorType::F16, 576, 576},
};

ThreadPool& pool_with(int threads) {
  static std::unique_ptr<ThreadPool> pools[3];
  if (!pools[threads]) pools[threads] = std::make_unique<ThreadPool>(threads);
  return *pools[threads];
}

void set_counters(benchmark::State& state, const Shape& s, int64_t tokens) {
  const double macs = static_cast<double>(s.rows) * s.cols * tokens;
  state.counters["GMAC/s"] = benchmark::Counter(macs / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(traits_of(s.type).name) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
}

void BM_Matmul(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const int64_t tokens = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const auto w = test::random_weights(s.type, s.rows, s.cols, 1);
  const auto x = test::random_floats(tokens * s.cols, 2);
  std::vector<float> y(static_cast<size_t>(tokens * s.rows));
  MatmulScratch scratch;
  ThreadPool& pool = pool_with(threads);
  for (auto _ : state) {
    matmul(s.type, w.data(), s.rows, s.cols, x.data(), tokens, y.data(), pool, scratch);
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(state, s, tokens);
}

void BM_MatmulRef(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const int64_t tokens = state.range(1);
  const auto w = test::random_weights(s.type, s.rows, s.cols, 1);
  const auto x = test::random_floats(tokens * s.cols, 2);
  std::vector<float> y(static_cast<size_t>(tokens * s.rows));
  for (auto _ : state) {
    matmul_ref(s.type, w.data(), s.rows, s.cols, x.data(), tokens, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(state, s, tokens);
}

void matmul_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "tokens", "threads"});
  for (int64_t shape = 0; shape < static_cast<int64_t>(std::size(kShapes)); ++shape) {
    for (int64_t tokens : {1, 8, 32, 64, 128}) {
      for (int64_t threads : {1, 2}) b->Args({shape, tokens, threads});
    }
  }
}

BENCHMARK(BM_Matmul)->Apply(matmul_args)->UseRealTime();
BENCHMARK(BM_MatmulRef)->ArgNames({"shape", "tokens"})->Args({0, 1})->Args({4, 1})->Args({5, 1})->UseRealTime();

}  // namespace
}  // namespace kvscope

BENCHMARK_MAIN();
