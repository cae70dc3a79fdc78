// TraceTimeline on a hand-made event log with known answers: steps, KV
// samples, request spans, and the queries at t, at and around the event
// boundaries; appending in batches equals building at once; a new engine's
// clock starting from zero does not run the timeline backwards; each
// tensor-parallel rank's forward passes become spans of their steps.
//   ctest --test-dir build -R trace_timeline_test
#include <QtTest>

#include <vector>

#include "models/trace_timeline.h"

using kvscope::EngineEvent;
using kvscope::FinishReason;
using kvscope::ui::TraceCounts;
using kvscope::ui::TraceTimeline;
using T = kvscope::EngineEventType;

namespace {

EngineEvent ev(double t, T type, kvscope::RequestId request = 0, int32_t index = 0, int64_t value = 0,
               int64_t value2 = 0) {
  return {t, type, request, index, value, value2};
}

// Three steps. Request 1 hits the prefix cache, is preempted by swap in step 1
// and finishes (length) in step 2. Request 2 has two completions: 2.0 hits
// the cache and is admitted, 2.1 is forked (no Admit) and copies a shared
// block on write; 2.1 never finishes. Step 2 never ends.
std::vector<EngineEvent> session() {
  return {
      ev(0.990, T::StepEnd, 0, 0, 5, 1),  // the end of a step begun before the recording
      ev(1.000, T::StepBegin, 0, 0, 7),
      ev(1.001, T::CacheHit, 1, 0, 16),
      ev(1.002, T::Allocate, 1, 0, 2),
      ev(1.003, T::Admit, 1, 0, 40),
      ev(1.0035, T::CacheHit, 2, 0, 4),
      ev(1.004, T::Admit, 2, 0, 8),
      ev(1.005, T::Schedule, 1, 0, 24),
      ev(1.005, T::Schedule, 2, 0, 8),
      ev(1.010, T::StepEnd, 0, 0, 32, 2),
      ev(1.011, T::KvUsage, 0, 0, 4, 1),
      ev(1.020, T::StepBegin, 0, 0, 8),
      ev(1.021, T::CopyOnWrite, 2, 1, 12, 40),
      ev(1.022, T::Preempt, 1, 0, 1),
      ev(1.022, T::SwapOut, 1, 0, 3),
      ev(1.023, T::Evict, 2, 1, 2),
      ev(1.030, T::StepEnd, 0, 0, 2, 2),
      ev(1.031, T::KvUsage, 0, 0, 6, 0),
      ev(1.040, T::StepBegin, 0, 0, 9),
      ev(1.041, T::SwapIn, 1, 0, 3),
      ev(1.045, T::Finish, 2, 0, static_cast<int64_t>(FinishReason::Stop)),
      ev(1.050, T::Finish, 1, 0, static_cast<int64_t>(FinishReason::Length)),
      ev(1.051, T::KvUsage, 0, 0, 2, 5),
  };
}

// Tensor parallelism at tp = 2: two steps, each rank's part of each forward
// pass (RankForward: value the rank, value2 nanoseconds), rank 1 starting a
// little later and waiting in a collective for rank 0. Two garbled events
// (rank -1, rank 99) are left out.
std::vector<EngineEvent> tpSession() {
  return {
      ev(2.000, T::StepBegin, 0, 0, 0),
      ev(2.001, T::RankForward, 0, 0, 0, 4'000'000),
      ev(2.0015, T::RankForward, 0, 0, 1, 3'500'000),
      ev(2.006, T::StepEnd, 0, 0, 12, 1),
      ev(2.010, T::StepBegin, 0, 0, 1),
      ev(2.011, T::RankForward, 0, 0, 0, 1'000'000),
      ev(2.011, T::RankForward, 0, 0, 1, 1'000'000),
      ev(2.0115, T::RankForward, 0, 0, -1, 5),
      ev(2.0115, T::RankForward, 0, 0, 99, 5),
      ev(2.013, T::StepEnd, 0, 0, 1, 1),
  };
}

}  // namespace

class TraceTimelineTest : public QObject {
  Q_OBJECT
 private slots:
  // Recording appends a batch 20 times a second for as long as it runs: the
  // log's storage must grow geometrically, not be reallocated (and copied
  // whole) for every batch.
  void appendGrowsTheLogGeometrically() {
    TraceTimeline timeline;
    int reallocations = 0;
    size_t capacity = 0;
    for (int batch = 0; batch < 2000; ++batch) {
      std::vector<EngineEvent> events;
      for (int i = 0; i < 10; ++i) events.push_back(ev(batch + i * 0.001, T::KvUsage, 0, 0, 3, 1));
      timeline.append(events);
      if (timeline.events().capacity() != capacity) {
        capacity = timeline.events().capacity();
        ++reallocations;
      }
    }
    QCOMPARE(timeline.num_events(), size_t(20000));
    QVERIFY2(reallocations <= 40, qPrintable(QString::number(reallocations)));  // ~log2(20000) = 15 for doubling
  }

  void emptyTimeline() {
    TraceTimeline tl;
    QVERIFY(tl.empty());
    QCOMPARE(tl.start_time(), 0.0);
    QVERIFY(!tl.step_at(1.0));
    QVERIFY(!tl.kv_usage_at(1.0));
    QVERIFY(tl.requests_active_at(1.0).empty());
    QVERIFY(tl.counts_at(1.0) == TraceCounts{});
    QCOMPARE(tl.events_around(1.0, 5, 5), std::make_pair(size_t{0}, size_t{0}));
  }

  void steps() {
    const TraceTimeline tl(session());
    QCOMPARE(tl.num_events(), session().size());
    QCOMPARE(tl.start_time(), 0.990);
    QCOMPARE(tl.end_time(), 1.051);
    QCOMPARE(tl.steps().size(), size_t{3});  // the orphan StepEnd makes no row
    const auto& s = tl.steps();
    QCOMPARE(s[0].step, int64_t{7});
    QCOMPARE(s[0].num_tokens, int64_t{32});
    QCOMPARE(s[0].num_seqs, int64_t{2});
    QVERIFY(s[0].ended);
    QVERIFY(qFuzzyCompare(s[0].duration_s(), 0.010));
    QCOMPARE(s[1].step, int64_t{8});
    QCOMPARE(s[1].num_tokens, int64_t{2});
    QCOMPARE(s[2].step, int64_t{9});
    QVERIFY(!s[2].ended);
    QCOMPARE(s[2].duration_s(), 0.0);
    QCOMPARE(tl.step_index_of_event(0), int64_t{-1});
    QCOMPARE(tl.step_index_of_event(1), int64_t{0});
    QCOMPARE(tl.step_index_of_event(10), int64_t{0});  // KvUsage after StepEnd: still step 7
    QCOMPARE(tl.step_index_of_event(11), int64_t{1});
  }

  void stepAtBoundaries() {
    const TraceTimeline tl(session());
    QVERIFY(!tl.step_at(0.999));
    QCOMPARE(tl.step_at(1.000), std::optional<size_t>(0));  // at StepBegin: that step
    QCOMPARE(tl.step_at(1.015), std::optional<size_t>(0));  // between steps: the last begun
    QCOMPARE(tl.step_at(1.0199), std::optional<size_t>(0));
    QCOMPARE(tl.step_at(1.020), std::optional<size_t>(1));
    QCOMPARE(tl.step_at(99.0), std::optional<size_t>(2));
  }

  void kvUsage() {
    const TraceTimeline tl(session());
    QCOMPARE(tl.kv_samples().size(), size_t{3});
    QVERIFY(!tl.kv_usage_at(1.0109));
    QCOMPARE(tl.kv_usage_at(1.011)->num_used_blocks, int64_t{4});
    QCOMPARE(tl.kv_usage_at(1.011)->num_cached_free_blocks, int64_t{1});
    QCOMPARE(tl.kv_usage_at(1.031)->num_used_blocks, int64_t{6});
    QCOMPARE(tl.kv_usage_at(1.050)->num_used_blocks, int64_t{6});
    QCOMPARE(tl.kv_usage_at(2.0)->num_cached_free_blocks, int64_t{5});
  }

  void requestSpans() {
    const TraceTimeline tl(session());
    const auto& r = tl.requests();
    QCOMPARE(r.size(), size_t{3});
    // In the order they opened: 1.0 (at its cache hit), 2.0, 2.1.
    QCOMPARE(r[0].request, kvscope::RequestId{1});
    QCOMPARE(r[0].begin_s, 1.001);
    QCOMPARE(r[0].num_prompt_tokens, int64_t{40});
    QCOMPARE(r[0].num_cached_tokens, int64_t{16});
    QCOMPARE(r[0].num_preemptions, 1);
    QCOMPARE(r[0].num_swap_preemptions, 1);
    QVERIFY(r[0].finished);
    QCOMPARE(r[0].end_s, 1.050);
    QCOMPARE(r[0].finish_value, int64_t(FinishReason::Length));

    QCOMPARE(r[1].request, kvscope::RequestId{2});
    QCOMPARE(r[1].index, 0);
    QCOMPARE(r[1].finish_value, int64_t(FinishReason::Stop));
    QCOMPARE(r[1].begin_s, 1.0035);
    QCOMPARE(r[1].num_cached_tokens, int64_t{4});
    QCOMPARE(r[1].num_preemptions, 0);

    QCOMPARE(r[2].index, 1);
    QCOMPARE(r[2].begin_s, 1.021);  // forked: opens at its first event
    QCOMPARE(r[2].num_prompt_tokens, int64_t{0});
    QCOMPARE(r[2].num_cached_tokens, int64_t{4});  // its first completion's hit
    QVERIFY(!r[2].finished);
  }

  void activeRequestsAtBoundaries() {
    const TraceTimeline tl(session());
    using V = std::vector<size_t>;
    QCOMPARE(tl.requests_active_at(1.0009), V{});
    QCOMPARE(tl.requests_active_at(1.001), V{0});  // from its first event, inclusive
    QCOMPARE(tl.requests_active_at(1.0035), (V{0, 1}));
    QCOMPARE(tl.requests_active_at(1.021), (V{0, 1, 2}));
    QCOMPARE(tl.requests_active_at(1.0449), (V{0, 1, 2}));
    QCOMPARE(tl.requests_active_at(1.045), (V{0, 2}));  // finished at t: no longer active
    QCOMPARE(tl.requests_active_at(1.050), V{2});
    QCOMPARE(tl.requests_active_at(5.0), V{2});  // never finished
  }

  void cumulativeCounts() {
    const TraceTimeline tl(session());
    QVERIFY(tl.counts_at(1.0) == TraceCounts{});
    TraceCounts c = tl.counts_at(1.001);
    QCOMPARE(c.num_cache_hits, int64_t{1});
    QCOMPARE(c.num_cached_tokens, int64_t{16});
    QCOMPARE(c.num_admits, int64_t{0});
    QCOMPARE(tl.counts_at(1.0035).num_cached_tokens, int64_t{20});
    c = tl.counts_at(1.0219);
    QCOMPARE(c.num_admits, int64_t{2});
    QCOMPARE(c.num_copy_on_writes, int64_t{1});
    QCOMPARE(c.num_preemptions, int64_t{0});
    c = tl.counts_at(1.022);  // preempt and swap-out share this time: both in
    QCOMPARE(c.num_preemptions, int64_t{1});
    QCOMPARE(c.num_swap_outs, int64_t{1});
    QCOMPARE(c.num_evicted_blocks, int64_t{0});
    QCOMPARE(tl.counts_at(1.023).num_evicted_blocks, int64_t{2});
    QCOMPARE(tl.counts_at(1.041).num_swap_ins, int64_t{1});
    QCOMPARE(tl.counts_at(1.0449).num_finishes, int64_t{0});
    QCOMPARE(tl.counts_at(1.045).num_finishes, int64_t{1});
    QVERIFY(tl.counts_at(9.0) == tl.total_counts());
    QCOMPARE(tl.total_counts().num_finishes, int64_t{2});
  }

  void eventWindows() {
    const TraceTimeline tl(session());
    QCOMPARE(tl.num_events_until(0.5), size_t{0});
    QCOMPARE(tl.num_events_until(1.005), size_t{9});  // both Schedules at 1.005
    QCOMPARE(tl.events_between(1.005, 1.011), std::make_pair(size_t{7}, size_t{11}));
    QCOMPARE(tl.events_between(1.0051, 1.0099), std::make_pair(size_t{9}, size_t{9}));
    QCOMPARE(tl.events_around(1.005, 3, 2), std::make_pair(size_t{6}, size_t{11}));
    QCOMPARE(tl.events_around(0.0, 3, 2), std::make_pair(size_t{0}, size_t{2}));
    QCOMPARE(tl.events_around(9.0, 3, 2), std::make_pair(tl.num_events() - 3, tl.num_events()));
  }

  void incrementalEqualsOneShot() {
    const std::vector<EngineEvent> all = session();
    const TraceTimeline one_shot(all);
    for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, all.size()}) {
      TraceTimeline grown;
      for (size_t i = 0; i < all.size(); i += chunk) {
        const size_t n = std::min(chunk, all.size() - i);
        grown.append(std::span<const EngineEvent>(all.data() + i, n));
      }
      QVERIFY2(grown == one_shot, qPrintable(QStringLiteral("chunk %1").arg(chunk)));
    }
    TraceTimeline cleared(all);
    cleared.clear();
    QVERIFY(cleared == TraceTimeline{});
  }

  void rankSpans() {
    const TraceTimeline tl(tpSession());
    QCOMPARE(tl.num_ranks(), 2);
    const auto& spans = tl.rank_spans();
    QCOMPARE(spans.size(), size_t{4});
    QCOMPARE(spans[0].rank, 0);
    QCOMPARE(spans[0].begin_s, 2.001);
    QVERIFY(qFuzzyCompare(spans[0].end_s, 2.005));
    QCOMPARE(spans[1].rank, 1);
    QVERIFY(qFuzzyCompare(spans[1].duration_s(), 0.0035));
    QCOMPARE(spans[0].step_index, int64_t{0});
    QCOMPARE(spans[1].step_index, int64_t{0});
    QCOMPARE(spans[2].step_index, int64_t{1});
    QCOMPARE(spans[3].rank, 1);
    QCOMPARE(tl.rank_spans_of_step(0), std::make_pair(size_t{0}, size_t{2}));
    QCOMPARE(tl.rank_spans_of_step(1), std::make_pair(size_t{2}, size_t{4}));
    QCOMPARE(tl.rank_spans_of_step(2), std::make_pair(size_t{4}, size_t{4}));
    QCOMPARE(TraceTimeline(session()).num_ranks(), 0);  // a tp = 1 log
    // Grown in batches: the same spans.
    const std::vector<EngineEvent> all = tpSession();
    TraceTimeline grown;
    for (size_t i = 0; i < all.size(); i += 3)
      grown.append(std::span<const EngineEvent>(all.data() + i, std::min<size_t>(3, all.size() - i)));
    QVERIFY(grown == tl);
  }

  void newEngineClockDoesNotRunBackwards() {
    // A second engine counts from zero again, 0.5 s after the first stopped.
    std::vector<EngineEvent> log = {ev(3.0, T::StepBegin, 0, 0, 0), ev(3.5, T::StepEnd, 0, 0, 4, 1),
                                    ev(0.1, T::StepBegin, 0, 0, 0), ev(0.3, T::StepEnd, 0, 0, 6, 1)};
    const TraceTimeline tl(log);
    QCOMPARE(tl.event_time(2), 3.5);
    QVERIFY(qFuzzyCompare(tl.event_time(3), 3.7));
    QCOMPARE(tl.steps().size(), size_t{2});
    QCOMPARE(tl.steps()[1].begin_s, 3.5);
    QCOMPARE(tl.events()[2].time_s, 0.1);  // the log itself is kept verbatim
    QCOMPARE(tl.step_at(3.6), std::optional<size_t>(1));
  }
};

QTEST_GUILESS_MAIN(TraceTimelineTest)
#include "trace_timeline_test.moc"
