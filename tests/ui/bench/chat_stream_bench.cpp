// The GUI thread's cost of one streaming render of the chat: a reply already
// `reply_chars` long (paragraphs, a list, a fenced code block, repeated) gets
// one more chunk of ~160 characters (about 40 tokens: what the worker
// coalesces in 50 ms at 800 tok/s) and the chat's render tick runs, with the
// layout and repaint it causes. Offscreen; the 40 ms between ticks is spent
// outside the timing.
// BM_ChatSendPaste: the cost of sending a long pasted message.
//   QT_QPA_PLATFORM=offscreen build/tests/ui/chat_stream_bench
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include <QCoreApplication>

#include "chat_widget.h"
#include "ui/bench/qt_benchmark_main.h"

namespace {

using namespace kvscope;

// Markdown as a model writes it, `n` characters of it.
QString replyText(int n) {
  const QString unit = QStringLiteral(
      "The paged attention engine keeps keys and values in fixed-size blocks, so a request "
      "takes memory as it grows instead of reserving its longest possible length.\n\n"
      "- blocks are shared between requests with the same prefix\n"
      "- a shared block is copied only when one of them writes to it\n\n"
      "```cpp\nint blocks = (tokens + block_size - 1) / block_size;\n\nreturn blocks;\n```\n\n"
      "## What it changes\n\nMore requests fit at once, and the batch stays full.\n\n");
  QString text;
  while (text.size() < n) text += unit;
  return text.left(n);
}

void BM_ChatStreamRender(benchmark::State& state) {
  const int start_chars = static_cast<int>(state.range(0));
  constexpr int kChunk = 160;
  const QString all = replyText(start_chars + kChunk * 400);
  ui::ChatWidget chat;
  chat.resize(700, 800);
  chat.show();
  ModelInfo info;
  info.name = "bench";
  info.context_length = 1 << 20;
  chat.onModelLoaded(info);
  chat.sendPrompt(QStringLiteral("Write"));
  chat.onRequestStarted(1, true);
  chat.onTokens(1, 0, all.left(start_chars));
  int at = start_chars;
  const auto tick = [] {  // past the chat's 40 ms render interval, then its render
    std::this_thread::sleep_for(std::chrono::milliseconds(41));
  };
  tick();
  QCoreApplication::processEvents();
  for (auto _ : state) {
    state.PauseTiming();
    if (at + kChunk > all.size()) at = start_chars;  // not reached at 400 chunks a run
    const QString chunk = all.mid(at, kChunk);
    at += kChunk;
    tick();
    state.ResumeTiming();
    chat.onTokens(1, 0, chunk);
    for (int round = 0; round < 3; ++round) QCoreApplication::processEvents();
  }
  state.counters["reply_chars_at_end"] = at;
}
BENCHMARK(BM_ChatStreamRender)->Arg(2000)->Arg(20000)->Arg(60000)->Unit(benchmark::kMillisecond)->Iterations(60);

// Lines as a person pastes them (a log, notes): `n` characters, one line
// break about every 80, no blank lines, so one Markdown paragraph.
QString pastedLines(int n) {
  QString text;
  for (int line = 0; text.size() < n; ++line) {
    text += QStringLiteral("Line %1 of the pasted notes, about as long as a line of a log or a text file.\n")
                .arg(line);
  }
  return text.left(n);
}

// The GUI thread's cost of sending a pasted message of `n` characters: the
// chat draws the conversation with it at once, before the engine answers
// (a paste too long for the context is refused only then).
void BM_ChatSendPaste(benchmark::State& state) {
  const QString paste = pastedLines(static_cast<int>(state.range(0)));
  ModelInfo info;
  info.name = "bench";
  info.context_length = 1 << 20;
  for (auto _ : state) {
    state.PauseTiming();
    ui::ChatWidget chat;
    chat.resize(700, 800);
    chat.show();
    chat.onModelLoaded(info);
    QCoreApplication::processEvents();
    state.ResumeTiming();
    chat.sendPrompt(paste);
    for (int round = 0; round < 3; ++round) QCoreApplication::processEvents();
  }
}
BENCHMARK(BM_ChatSendPaste)->Arg(2000)->Arg(8000)->Arg(20000)->Arg(60000)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

int main(int argc, char** argv) { return kvscope::bench::run_qt_benchmarks(argc, argv); }
