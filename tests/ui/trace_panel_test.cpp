// TracePanel, offscreen: records a real trace from an engine running the
// random tiny model (tests/support/tiny_model.h) under memory pressure, saves
// it with the panel, opens it in a new panel and gets the same timeline;
// refuses files that are not kvscope traces with a message; the slider and
// Play move the summary through the trace; a tensor-parallel trace (hand-made,
// and recorded from an engine at tp = 2) gets one rank lane per rank with
// that rank's forward passes, the lanes showing the step at the slider.
//   ctest --test-dir build -R trace_panel_test
#include <QComboBox>
#include <QFile>
#include <QPushButton>
#include <QSlider>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

#include "engine_types.h"
#include "kvscope/chrome_trace.h"
#include "kvscope/engine.h"
#include "rank_lanes_plot.h"
#include "support/tiny_model.h"
#include "trace_panel.h"

using kvscope::EngineEvent;
using kvscope::ui::RankLanesPlot;
using kvscope::ui::TracePanel;
using kvscope::ui::TraceTimeline;
using T = kvscope::EngineEventType;

namespace {

// Hand-made: three steps; request 1 is preempted (recompute) in step 1 and
// finishes in step 2.
kvscope::ui::EventBatch smallSession() {
  return {
      {1.000, T::StepBegin, 0, 0, 0, 0},   {1.002, T::Admit, 1, 0, 20, 0},   {1.010, T::StepEnd, 0, 0, 20, 1},
      {1.011, T::KvUsage, 0, 0, 5, 0},     {1.100, T::StepBegin, 0, 0, 1, 0}, {1.101, T::Preempt, 1, 0, 0, 0},
      {1.110, T::StepEnd, 0, 0, 0, 0},     {1.111, T::KvUsage, 0, 0, 0, 5},  {1.200, T::StepBegin, 0, 0, 2, 0},
      {1.201, T::Admit, 1, 0, 20, 0},      {1.205, T::Finish, 1, 0, 2, 0},   {1.210, T::StepEnd, 0, 0, 20, 1},
      {1.211, T::KvUsage, 0, 0, 0, 5},
  };
}

// tp = 2 by hand: three steps, each with rank 0's and rank 1's part of the
// forward pass (value: the rank, value2: nanoseconds); rank 1 takes 0.8 ms
// where rank 0 takes 1 ms.
kvscope::ui::EventBatch twoRankSession() {
  kvscope::ui::EventBatch events;
  for (int step = 0; step < 3; ++step) {
    const double t = 1.0 + 0.01 * step;
    events.push_back({t, T::StepBegin, 0, 0, step, 0});
    events.push_back({t + 0.001, T::RankForward, 0, 0, 0, 1'000'000});
    events.push_back({t + 0.0011, T::RankForward, 0, 0, 1, 800'000});
    events.push_back({t + 0.003, T::StepEnd, 0, 0, 4, 1});
  }
  return events;
}

}  // namespace

class TracePanelTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    kvscope::ui::registerEngineMetaTypes();
    QVERIFY(dir_.isValid());
    model_path_ = dir_.filePath(QStringLiteral("tiny.gguf")).toStdString();
    kvscope::test::TinyModelSpec spec;
    spec.matrix_type = kvscope::TensorType::Q8_0;
    const kvscope::Status written = kvscope::test::write_tiny_gguf(spec, model_path_);
    QVERIFY2(written.ok(), written.error().c_str());
  }

  void recordSaveAndOpenGiveTheSameTimeline() {
    TracePanel panel;
    QSignalSpy recording(&panel, &TracePanel::recordingChanged);
    panel.findChild<QPushButton*>(QStringLiteral("traceRecord"))->click();
    QCOMPARE(recording.count(), 1);
    QCOMPARE(recording.at(0).at(0).toBool(), true);

    // A small KV pool so that the requests preempt each other (swap), a
    // shared prompt prefix (cache hits) and a request with n = 2 whose second
    // completion writes into the shared last prompt block (copy-on-write).
    kvscope::EngineConfig config;
    config.model_path = model_path_;
    config.num_threads = 2;
    config.block_size = 4;
    config.num_blocks = 24;
    config.max_seqs = 8;
    config.max_batched_tokens = 16;
    config.preemption = kvscope::PreemptionMode::Swap;
    auto created = kvscope::Engine::create(config);
    QVERIFY2(created.ok(), created.ok() ? "" : created.error().c_str());
    std::unique_ptr<kvscope::Engine> engine = std::move(*created);
    engine->set_tracing(panel.isRecording());
    const std::vector<int32_t> prefix = {3, 1, 4, 1, 5, 9, 2, 6};
    auto submit = [&](int i) {
      kvscope::GenerationRequest request;
      request.prompt_tokens = prefix;
      for (int k = 0; k <= i % 3; ++k) request.prompt_tokens.push_back(100 + i * 7 + k);
      request.sampling.temperature = 0.0f;
      request.sampling.max_tokens = 16;
      request.sampling.ignore_eos = true;
      request.n = i == 0 ? 2 : 1;
      return engine->submit(std::move(request)).ok();
    };
    // The first request's prefix is in the cache (computed) before the others
    // arrive, so they hit it.
    QVERIFY(submit(0));
    engine->step();
    engine->step();
    panel.appendEvents(engine->take_events());
    for (int i = 1; i < 6; ++i) QVERIFY(submit(i));
    // The worker's way: batches now and then, oldest first.
    for (int step = 1; engine->has_work(); ++step) {
      engine->step();
      if (step % 3 == 0) panel.appendEvents(engine->take_events());
      QVERIFY2(step < 2000, "the engine did not finish");
    }
    panel.appendEvents(engine->take_events());

    const TraceTimeline& recorded = panel.timeline();
    QVERIFY(recorded.steps().size() > 10);
    QCOMPARE(recorded.requests().size(), size_t{7});  // 6 requests, one with 2 completions
    for (const auto& span : recorded.requests()) QVERIFY(span.finished);
    const kvscope::ui::TraceCounts totals = recorded.total_counts();
    QVERIFY2(totals.num_preemptions > 0, "the pool was meant to be too small");
    QVERIFY(totals.num_swap_outs > 0);
    QVERIFY(totals.num_cache_hits > 0);
    QVERIFY(totals.num_copy_on_writes > 0);
    QCOMPARE(totals.num_finishes, int64_t{7});
    qInfo("recorded %zu events, %zu steps; %lld preemptions, %lld cache hits, %lld copy-on-writes",
          recorded.num_events(), recorded.steps().size(), static_cast<long long>(totals.num_preemptions),
          static_cast<long long>(totals.num_cache_hits), static_cast<long long>(totals.num_copy_on_writes));
    QVERIFY(TraceTimeline(recorded.events()) == recorded);  // batches == at once
    QCOMPARE(panel.cursorTime(), recorded.end_time());       // live view follows the end
    QVERIFY(panel.summaryText().contains(QStringLiteral("0 requests active")));

    const QString path = dir_.filePath(QStringLiteral("recorded.json"));
    QVERIFY2(panel.saveTraceFile(path), qPrintable(panel.messageText()));
    QVERIFY(panel.messageText().contains(QStringLiteral("Saved")));

    TracePanel opened;
    QVERIFY2(opened.loadTraceFile(path), qPrintable(opened.messageText()));
    QVERIFY(opened.isShowingFile());
    QVERIFY(opened.timeline() == recorded);
    QCOMPARE(opened.cursorTime(), recorded.start_time());  // a replay starts at the top
    opened.appendEvents(smallSession());                     // a live batch does not mix in
    QVERIFY(opened.timeline() == recorded);
  }

  void openingWhileRecordingStopsRecording() {
    const QString path = dir_.filePath(QStringLiteral("small.json"));
    QVERIFY(kvscope::write_chrome_trace(smallSession(), path.toStdString()).ok());
    TracePanel panel;
    panel.setRecording(true);
    QSignalSpy recording(&panel, &TracePanel::recordingChanged);
    QVERIFY(panel.loadTraceFile(path));
    QCOMPARE(recording.count(), 1);
    QCOMPARE(recording.at(0).at(0).toBool(), false);
    QVERIFY(!panel.isRecording());
    // Record again: a new, empty live trace, which says it is recording
    // (it said "press Record", which would stop it).
    panel.setRecording(true);
    QVERIFY(!panel.isShowingFile());
    QVERIFY(panel.timeline().empty());
    QVERIFY2(panel.summaryText().startsWith(QStringLiteral("Recording:")), qPrintable(panel.summaryText()));
    panel.setRecording(false);
    QVERIFY2(panel.summaryText().contains(QStringLiteral("press Record")), qPrintable(panel.summaryText()));
  }

  void refusesFilesThatAreNotTraces() {
    const QString garbage = dir_.filePath(QStringLiteral("garbage.json"));
    const QString other_json = dir_.filePath(QStringLiteral("other.json"));
    for (const auto& [path, text] : {std::pair{garbage, QByteArray("\x01\x02 this is not { json")},
                                     std::pair{other_json, QByteArray(R"({"foo": [1, 2, 3]})")}}) {
      QFile file(path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(text);
    }
    TracePanel panel;
    QVERIFY(!panel.saveTraceFile(dir_.filePath(QStringLiteral("empty.json"))));  // nothing recorded
    QVERIFY(panel.messageText().contains(QStringLiteral("Nothing to save")));

    panel.appendEvents(smallSession());
    const TraceTimeline before = panel.timeline();
    QVERIFY(!panel.loadTraceFile(garbage));
    QVERIFY2(panel.messageText().contains(QStringLiteral("not JSON")), qPrintable(panel.messageText()));
    QVERIFY(!panel.loadTraceFile(other_json));
    QVERIFY2(panel.messageText().contains(QStringLiteral("traceEvents")), qPrintable(panel.messageText()));
    QVERIFY(!panel.loadTraceFile(dir_.filePath(QStringLiteral("missing.json"))));
    QVERIFY2(panel.messageText().contains(QStringLiteral("cannot open")), qPrintable(panel.messageText()));
    QVERIFY(panel.timeline() == before);  // what was shown stays
    QVERIFY(!panel.isShowingFile());

    QVERIFY(!panel.saveTraceFile(QStringLiteral("/nonexistent_dir_kvscope/trace.json")));
    QVERIFY(panel.messageText().contains(QStringLiteral("/nonexistent_dir_kvscope/trace.json")));
  }

  void rankLanesShowEachRankSideBySide() {
    TracePanel panel;
    auto* lanes = panel.findChild<RankLanesPlot*>(QStringLiteral("traceRankLanes"));
    QVERIFY(lanes);
    panel.setRecording(true);
    panel.appendEvents(smallSession());  // tp = 1: no RankForward, no lanes
    QVERIFY(lanes->isHidden());
    QCOMPARE(lanes->numLanes(), 0);

    panel.clear();
    panel.appendEvents(twoRankSession());
    QVERIFY(!lanes->isHidden());
    QCOMPARE(lanes->numLanes(), 2);
    QCOMPARE(lanes->numBarsInLane(0), 3);
    QCOMPARE(lanes->numBarsInLane(1), 3);

    // The slider in step 1: the lanes span that step (1.010 .. 1.013 s, in ms
    // since the trace began at 1.000) and give each rank's time in it.
    panel.setCursorTime(1.012);
    QCOMPARE(lanes->shownStep(), std::optional<size_t>(1));
    QCOMPARE(lanes->laneLabel(0), QStringLiteral("rank 0 · 1.00 ms"));
    QCOMPARE(lanes->laneLabel(1), QStringLiteral("rank 1 · 0.80 ms"));
    QVERIFY(lanes->xAxis->range().contains(10.0) && lanes->xAxis->range().contains(13.0));
    QVERIFY(!lanes->xAxis->range().contains(3.0));  // step 0 is out of view
    QCOMPARE(lanes->xAxis->label(), QStringLiteral("ms since step 1 began"));

    // Opened from a file: the same lanes.
    const QString path = dir_.filePath(QStringLiteral("two_ranks.json"));
    QVERIFY(panel.saveTraceFile(path));
    TracePanel opened;
    QVERIFY2(opened.loadTraceFile(path), qPrintable(opened.messageText()));
    auto* opened_lanes = opened.findChild<RankLanesPlot*>(QStringLiteral("traceRankLanes"));
    QCOMPARE(opened_lanes->numLanes(), 2);
    QCOMPARE(opened_lanes->numBarsInLane(1), 3);

    panel.clear();
    QVERIFY(lanes->isHidden());
    QCOMPARE(lanes->numLanes(), 0);
  }

  // An engine at tp = 2 on a model of 6 query heads over 3 KV heads: every
  // step that ran the model puts a bar on both ranks' lanes.
  void rankLanesFromATensorParallelEngine() {
    const std::string path = dir_.filePath(QStringLiteral("tp_tiny.gguf")).toStdString();
    const kvscope::Status written =
        kvscope::test::write_tiny_gguf(kvscope::test::tensor_parallel_tiny_spec(kvscope::TensorType::Q8_0), path);
    QVERIFY2(written.ok(), written.error().c_str());
    kvscope::EngineConfig config;
    config.model_path = path;
    config.num_threads = 2;
    config.num_blocks = 16;
    config.tp = 2;
    auto created = kvscope::Engine::create(config);
    QVERIFY2(created.ok(), created.ok() ? "" : created.error().c_str());
    std::unique_ptr<kvscope::Engine> engine = std::move(*created);
    TracePanel panel;
    panel.setRecording(true);
    engine->set_tracing(true);
    kvscope::GenerationRequest request;
    request.prompt_tokens = {3, 1, 4, 1, 5};
    request.sampling.temperature = 0.0f;
    request.sampling.max_tokens = 4;
    request.sampling.ignore_eos = true;
    QVERIFY(engine->submit(std::move(request)).ok());
    for (int step = 0; engine->has_work(); ++step) {
      engine->step();
      QVERIFY2(step < 100, "the engine did not finish");
    }
    panel.appendEvents(engine->take_events());
    size_t forward_steps = 0;
    for (const auto& s : panel.timeline().steps()) forward_steps += s.num_tokens > 0 ? 1 : 0;
    QVERIFY(forward_steps >= 4);  // the prefill and the decodes
    auto* lanes = panel.findChild<RankLanesPlot*>(QStringLiteral("traceRankLanes"));
    QVERIFY(!lanes->isHidden());
    QCOMPARE(lanes->numLanes(), 2);
    QCOMPARE(lanes->numBarsInLane(0), static_cast<int>(forward_steps));
    QCOMPARE(lanes->numBarsInLane(1), static_cast<int>(forward_steps));
  }

  void sliderMovesTheSummary() {
    TracePanel panel;
    panel.setRecording(true);
    panel.appendEvents(smallSession());
    auto* slider = panel.findChild<QSlider*>(QStringLiteral("traceSlider"));
    QVERIFY(slider);
    QCOMPARE(slider->maximum(), 211000);  // microseconds, 1.000 .. 1.211
    QCOMPARE(slider->value(), 211000);    // following the end
    QVERIFY(panel.summaryText().startsWith(QStringLiteral("step 2 (20 tokens, 1 seq,")));
    QVERIFY(panel.summaryText().contains(QStringLiteral("preemptions 1")));

    slider->setValue(5000);  // 1.005: step 0, request 1 admitted
    QCOMPARE(panel.cursorTime(), 1.005);
    QVERIFY2(panel.summaryText().startsWith(QStringLiteral("step 0 (20 tokens")), qPrintable(panel.summaryText()));
    QVERIFY(panel.summaryText().contains(QStringLiteral("1 request active")));
    QVERIFY(panel.summaryText().contains(QStringLiteral("preemptions 0")));
    QVERIFY(!panel.summaryText().contains(QStringLiteral("KV")));  // no sample yet

    slider->setValue(105000);  // 1.105: step 1, after the preemption
    QVERIFY2(panel.summaryText().startsWith(QStringLiteral("step 1 (0 tokens")), qPrintable(panel.summaryText()));
    QVERIFY(panel.summaryText().contains(QStringLiteral("preemptions 1")));
    QVERIFY(panel.summaryText().contains(QStringLiteral("KV 5 used, 0 cached-free")));

    // Moved away from the end: new events do not drag the view along...
    panel.appendEvents({{1.300, T::StepBegin, 0, 0, 3, 0}, {1.310, T::StepEnd, 0, 0, 0, 0}});
    QCOMPARE(slider->maximum(), 310000);
    QCOMPARE(slider->value(), 105000);
    // ...until the slider is back at the end.
    slider->setValue(slider->maximum());
    panel.appendEvents({{1.400, T::StepBegin, 0, 0, 4, 0}});
    QCOMPARE(slider->value(), 400000);
    QVERIFY(panel.summaryText().startsWith(QStringLiteral("step 4 (running)")));

    // Play from the top at 8x: the 0.4 s trace ends in about 50 ms.
    slider->setValue(0);
    auto* speed = panel.findChild<QComboBox*>(QStringLiteral("traceSpeed"));
    speed->setCurrentIndex(speed->findData(8.0));
    auto* play = panel.findChild<QPushButton*>(QStringLiteral("tracePlay"));
    play->click();
    QVERIFY(play->isChecked());
    QTRY_VERIFY_WITH_TIMEOUT(!play->isChecked(), 5000);
    QCOMPARE(panel.cursorTime(), panel.timeline().end_time());
  }

 private:
  QTemporaryDir dir_;
  std::string model_path_;
};

QTEST_MAIN(TracePanelTest)
#include "trace_panel_test.moc"
