// kernel_bench: matmul throughput for SmolLM2-135M's shapes (Q4_1 layers,
// Q8_0 output head) at 1 and 2 threads, decode (1 token) to prefill (128),
// plus the reference for comparison. Counter GMAC/s = rows * cols * tokens / time.
// BM_PackedMatmul / BM_MatmulParts time matmul_packed (packed_matmul.h) and
// matmul() per part on the same shapes, stacked QKV and gate|up included;
// GMAC/s_cpu divides by the calling thread's CPU time (robust to a noisy
// shared machine; at 2 threads it is the per-thread rate of chunk 0).
// K-quant stacked shapes (Q2_K..Q6_K, tokens 1 and 64): BM_PackedMatmul is
// the integer kernel (kquant_packed.h), BM_MatmulParts the old dequantise path:
//   ./kernel_bench --benchmark_filter='(Packed|Parts).*shape:([7-9]|1[0-5])/'
// Q5_0 (Gemma's 640-wide rows): --benchmark_filter='Packed.*shape:1[67]/'
// Gemma's head at 2 threads: --benchmark_filter='Packed.*shape:18/tokens:1/threads:2/l3:0'
// l3:1 cycles through copies of the weights (>= 64 MiB in all) so they stream
// from L3 as in a real decode step; l3:0 reuses one copy (L2-hot when small).
//   ./kernel_bench --benchmark_filter='Packed|Parts' --benchmark_repetitions=5
//   ./kernel_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// KVSCOPE_CPU=avx2 measures the AVX2 path. The context block (and the JSON
// "context") names the CPU and the ISA path in use (cpu_context.h).
#include <benchmark/benchmark.h>

#include <ctime>
#include <memory>
#include <vector>

#include "kernels/bench/cpu_context.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_matmul.h"
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

// Stacked shapes for matmul_packed vs matmul() per part.
struct StackedShape {
  TensorType type;
  int64_t cols;
  std::vector<int64_t> part_rows;
};

const StackedShape kStackedShapes[] = {
    {TensorType::Q4_1, 576, {576}},  {TensorType::Q4_1, 576, {192}},      {TensorType::Q4_1, 576, {1536}},
    {TensorType::Q4_1, 1536, {576}}, {TensorType::Q8_0, 576, {49152}},    {TensorType::Q4_1, 576, {576, 192, 192}},
    {TensorType::Q4_1, 576, {1536, 1536}},
    // K-quants (super-blocks of 256: only rows whose length is a multiple of
    // 256 are K-quants in a Q4_K_M file; 640- and 576-wide rows fall back to
    // Q5_0/Q8_0). Gemma 3 270M attn_output 640x1024 and ffn_down 640x2048,
    // SmolLM2-135M ffn_down 576x1536, and a 2048-wide gate|up. BM_MatmulParts
    // on these is the old path (dequantise rows to f32, then FMA).
    {TensorType::Q4_K, 1024, {640}},  {TensorType::Q4_K, 2048, {640}},     {TensorType::Q6_K, 2048, {640}},
    {TensorType::Q4_K, 1536, {576}},  {TensorType::Q6_K, 1536, {576}},     {TensorType::Q5_K, 2048, {640}},
    {TensorType::Q4_K, 2048, {2048, 2048}},  {TensorType::Q3_K, 2048, {640}}, {TensorType::Q2_K, 2048, {640}},
    // Q5_0 (5-bit packed layout, packed_matmul_internal.h): Gemma 3 270M
    // Q4_K_M's 640-wide q, k, gate and up fall back to Q5_0; gate-sized
    // 2048x640 and its transpose 640x2048 (rows x cols).
    {TensorType::Q5_0, 640, {2048}},  {TensorType::Q5_0, 2048, {640}},
    // Gemma 3 270M's tied Q8_0 head (178 MB packed): how the rows are chunked
    // over the threads matters at 2 threads on a shared machine.
    {TensorType::Q8_0, 640, {262144}},
};

// Shapes timed at 1 and 64 tokens only (K-quants, Q5_0 and the Gemma
// head), not 1..128.
bool is_decode_prefill_shape(const StackedShape& s) {
  return s.type == TensorType::Q2_K || s.type == TensorType::Q3_K || s.type == TensorType::Q4_K ||
         s.type == TensorType::Q5_K || s.type == TensorType::Q6_K || s.type == TensorType::Q5_0 ||
         s.part_rows[0] >= 65536;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void set_stacked_counters(benchmark::State& state, const StackedShape& s, int64_t tokens, double cpu_s) {
  int64_t rows = 0;
  std::string parts;
  for (int64_t r : s.part_rows) {
    rows += r;
    if (!parts.empty()) parts += '+';
    parts += std::to_string(r);
  }
  const double macs = static_cast<double>(rows) * s.cols * tokens;
  state.counters["GMAC/s"] = benchmark::Counter(macs / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GMAC/s_cpu"] = macs * static_cast<double>(state.iterations()) / 1e9 / cpu_s;
  state.SetLabel(std::string(traits_of(s.type).name) + " " + parts + "x" + std::to_string(s.cols));
}

// Copies of one stacked weight: copy c's parts at parts[c].
struct StackedData {
  std::vector<std::vector<uint8_t>> w;
  std::vector<std::vector<WeightPart>> parts;
  int64_t rows = 0;
};

StackedData make_stacked(const StackedShape& s, bool l3) {
  StackedData d;
  size_t bytes = 0;
  for (int64_t r : s.part_rows) {
    d.rows += r;
    bytes += row_bytes(s.type, s.cols) * static_cast<size_t>(r);
  }
  const size_t num_copies = l3 ? ((size_t{64} << 20) + bytes - 1) / bytes : 1;
  for (size_t c = 0; c < num_copies; ++c) {
    for (size_t i = 0; i < s.part_rows.size(); ++i) {
      d.w.push_back(test::random_weights(s.type, s.part_rows[i], s.cols, static_cast<uint32_t>(1 + i)));
    }
  }
  for (size_t c = 0; c < num_copies; ++c) {
    d.parts.emplace_back();
    for (size_t i = 0; i < s.part_rows.size(); ++i) {
      d.parts.back().push_back({d.w[c * s.part_rows.size() + i].data(), s.part_rows[i]});
    }
  }
  return d;
}

void BM_PackedMatmul(benchmark::State& state) {
  const StackedShape& s = kStackedShapes[state.range(0)];
  const int64_t tokens = state.range(1);
  const StackedData d = make_stacked(s, state.range(3) != 0);
  std::vector<PackedWeight> pws;
  for (const auto& parts : d.parts) pws.push_back(PackedWeight::pack(s.type, s.cols, parts));
  size_t c = 0;
  const auto x = test::random_floats(tokens * s.cols, 2);
  std::vector<float> y(static_cast<size_t>(tokens * d.rows));
  MatmulScratch scratch;
  ThreadPool& pool = pool_with(static_cast<int>(state.range(2)));
  const double cpu0 = thread_cpu_seconds();
  for (auto _ : state) {
    matmul_packed(pws[c], x.data(), tokens, y.data(), pool, scratch);
    c = c + 1 == pws.size() ? 0 : c + 1;
    benchmark::DoNotOptimize(y.data());
  }
  set_stacked_counters(state, s, tokens, thread_cpu_seconds() - cpu0);
  if (!pws[0].is_packed()) state.SetLabel("(not packed: fallback)");
}

void BM_MatmulParts(benchmark::State& state) {
  const StackedShape& s = kStackedShapes[state.range(0)];
  const int64_t tokens = state.range(1);
  const StackedData d = make_stacked(s, state.range(3) != 0);
  size_t c = 0;
  const auto x = test::random_floats(tokens * s.cols, 2);
  std::vector<float> y(static_cast<size_t>(tokens * d.rows));
  MatmulScratch scratch;
  ThreadPool& pool = pool_with(static_cast<int>(state.range(2)));
  const double cpu0 = thread_cpu_seconds();
  for (auto _ : state) {
    float* yp = y.data();
    for (const WeightPart& p : d.parts[c]) {
      matmul(s.type, p.data, p.num_rows, s.cols, x.data(), tokens, yp, pool, scratch);
      yp += p.num_rows * tokens;
    }
    c = c + 1 == d.parts.size() ? 0 : c + 1;
    benchmark::DoNotOptimize(y.data());
  }
  set_stacked_counters(state, s, tokens, thread_cpu_seconds() - cpu0);
}

void stacked_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "tokens", "threads", "l3"});
  for (int64_t shape = 0; shape < static_cast<int64_t>(std::size(kStackedShapes)); ++shape) {
    const bool two_counts = is_decode_prefill_shape(kStackedShapes[shape]);
    for (int64_t tokens : two_counts ? std::vector<int64_t>{1, 64} : std::vector<int64_t>{1, 8, 32, 128}) {
      for (int64_t threads : {1, 2}) {
        for (int64_t l3 : {0, 1}) {
          if (l3 == 0 || tokens <= 8) b->Args({shape, tokens, threads, l3});
        }
      }
    }
  }
}

BENCHMARK(BM_PackedMatmul)->Apply(stacked_args)->UseRealTime();
BENCHMARK(BM_MatmulParts)->Apply(stacked_args)->UseRealTime();
BENCHMARK(BM_Matmul)->Apply(matmul_args)->UseRealTime();
BENCHMARK(BM_MatmulRef)->ArgNames({"shape", "tokens"})->Args({0, 1})->Args({4, 1})->Args({5, 1})->UseRealTime();

}  // namespace
}  // namespace kvscope

// BENCHMARK_MAIN() plus the CPU in the run's context (cpu_context.h).
int main(int argc, char** argv) { return kvscope::bench::run_benchmarks(argc, argv); }
