// The GUI thread's cost of one engine snapshot in the main window: the
// window takes it (MainWindow::onSnapshot: block map, sequence table, plots,
// memory and shared-prefix panels, status line) and the event loop runs what
// that queued (the plots' replots, the layout, the repaint of what changed),
// as the app does 20 times a second while it serves (app/gui/engine_worker).
// Offscreen, 1600 x 1000, no engine: hand-made snapshots of 64 running
// sequences of `blocks_per_seq` blocks, each snapshot covering 8
// decode steps, as a GPU serving 64 requests at ~6 ms a step sends them.
// Pools of 8,192 blocks, and of 131,072 (a GPU's pool sized by
// gpu_memory_percent).
//
// At 20 Hz a snapshot costing C ms takes 2C% of the GUI thread, and a frame
// that lands behind one waits up to C ms: under ~10 ms keeps a 60 Hz frame
// in budget (docs/desktop_app.md, "Responsiveness").
//   QT_QPA_PLATFORM=offscreen build/tests/ui/bench/window_snapshot_bench
#include <benchmark/benchmark.h>

#include <memory>

#include <QCoreApplication>

#include "kvscope/model_info.h"
#include "main_window.h"
#include "ui/test_snapshots.h"
#include "ui/bench/qt_benchmark_main.h"

namespace {

using namespace kvscope;

constexpr int kSeqs = 64;
constexpr int kStepsPerSnapshot = 8;

// The base snapshot advanced by `n` snapshots' worth of decode steps.
std::shared_ptr<const EngineSnapshot> advanced(const EngineSnapshot& base, uint64_t n) {
  auto s = std::make_shared<EngineSnapshot>(base);
  s->step = base.step + n * kStepsPerSnapshot;
  s->time_s = 0.05 * static_cast<double>(n);
  s->recent_steps.clear();
  for (int i = 0; i < kStepsPerSnapshot; ++i) {
    StepStats st;
    st.step = s->step - kStepsPerSnapshot + 1 + static_cast<uint64_t>(i);
    st.num_decode_tokens = kSeqs;
    st.num_seqs = kSeqs;
    st.step_time_s = 0.0059 + 0.0001 * static_cast<double>(i % 3);
    st.attention_time_s = 0.0012;
    s->recent_steps.push_back(st);
  }
  s->last_step = s->recent_steps.back();
  for (SequenceSnapshot& seq : s->sequences) {  // one token per step, as decode adds them
    seq.num_computed_tokens += static_cast<int32_t>(n * kStepsPerSnapshot);
    seq.tokens.resize(static_cast<size_t>(seq.num_computed_tokens), 7);
  }
  return s;
}

void BM_WindowTakesSnapshot(benchmark::State& state) {
  const int blocks_per_seq = static_cast<int>(state.range(0));
  const int pool_blocks = static_cast<int>(state.range(1));
  ui::MainWindow window;
  window.resize(1600, 1000);
  window.show();
  ModelInfo info;
  info.name = "bench";
  info.context_length = 8192;
  info.num_kv_blocks = pool_blocks;
  info.block_size = 16;
  info.weight_bytes = 98'000'000;
  info.kv_pool_bytes = static_cast<size_t>(pool_blocks) * 16 * test::kSmolKvBytesPerToken;
  window.onModelLoaded(info);
  QCoreApplication::processEvents();
  const std::shared_ptr<const EngineSnapshot> base = test::makeSnapshot(kSeqs, blocks_per_seq, 4, pool_blocks);
  uint64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::shared_ptr<const EngineSnapshot> snapshot = advanced(*base, ++n);
    state.ResumeTiming();
    window.onSnapshot(snapshot);
    // The replots, layout requests and the repaint they post, as the event
    // loop would run them before the next snapshot arrives.
    for (int round = 0; round < 3; ++round) QCoreApplication::processEvents();
  }
  state.counters["blocks_in_use"] = static_cast<double>(base->kv.num_used_blocks);
}
// Args: blocks per sequence, pool blocks (8,192 of 16 tokens: 6 GB of the
// default model's K/V; 131,072: 97 GB, what gpu_memory_percent = 70 gives on
// an H200).
BENCHMARK(BM_WindowTakesSnapshot)
    ->Args({8, 8192})
    ->Args({68, 8192})
    ->Args({68, 131072})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) { return kvscope::bench::run_qt_benchmarks(argc, argv); }
