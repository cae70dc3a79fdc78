// TraceEventModel under QAbstractItemModelTester while its window slides
// forward, back, jumps and follows a growing timeline; plus the words it
// uses for each kind of event and the values of its cells.
//   ctest --test-dir build -R trace_event_model_test
#include <QAbstractItemModelTester>
#include <QColor>
#include <QtTest>

#include <vector>

#include "models/trace_event_model.h"
#include "models/trace_timeline.h"
#include "palette_colors.h"

using kvscope::EngineEvent;
using kvscope::FinishReason;
using kvscope::ui::TraceEventModel;
using kvscope::ui::TraceTimeline;
using T = kvscope::EngineEventType;

namespace {

// n steps of 4 ms, each: StepBegin, Schedule of request 1, StepEnd, KvUsage,
// one a millisecond: event i of steps(n) is at 1 s + i ms.
std::vector<EngineEvent> steps(int n, int first_step = 0) {
  std::vector<EngineEvent> out;
  for (int s = first_step; s < first_step + n; ++s) {
    const double t0 = 1.0 + 0.004 * s;
    out.push_back({t0, T::StepBegin, 0, 0, s, 0});
    out.push_back({t0 + 0.001, T::Schedule, 1, 0, 1, 0});
    out.push_back({t0 + 0.002, T::StepEnd, 0, 0, 1, 1});
    out.push_back({t0 + 0.003, T::KvUsage, 0, 0, 3, 2});
  }
  return out;
}

QString cell(const TraceEventModel& m, int row, int column) { return m.data(m.index(row, column)).toString(); }

}  // namespace

class TraceEventModelTest : public QObject {
  Q_OBJECT
 private slots:
  void emptyModel() {
    TraceEventModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), int(TraceEventModel::NumColumns));
    QCOMPARE(model.currentRow(), -1);
    model.setTime(3.0);  // no timeline: nothing happens
    TraceTimeline empty;
    model.setTimeline(&empty);
    model.setTime(1.0);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.headerData(TraceEventModel::Details, Qt::Horizontal).toString(), QStringLiteral("What happened"));
  }

  void windowSlidesAroundTime() {
    const TraceTimeline timeline(steps(10));  // 40 events, 1.000 .. 1.039
    TraceEventModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setWindowSize(3, 2);
    model.setTimeline(&timeline);
    // At the start: the first event and the 2 after it.
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.currentRow(), 0);

    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    model.setTime(1.0105);  // events 0..10 at or before: window 8..12
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(model.eventIndex(0), size_t{8});
    QCOMPARE(model.currentRow(), 2);
    QCOMPARE(model.data(model.index(2, 0), TraceEventModel::EventIndexRole).toULongLong(), qulonglong{10});
    QCOMPARE(reset.count(), 1);  // no overlap with 0..2: started over
    model.setTime(1.0125);       // window 10..14: slides by two
    QCOMPARE(reset.count(), 1);
    QVERIFY(removed.count() >= 1);
    QVERIFY(inserted.count() >= 1);
    QCOMPARE(model.eventIndex(0), size_t{10});
    QCOMPARE(cell(model, model.currentRow(), TraceEventModel::Time), QStringLiteral("12.000"));
    model.setTime(1.0105);  // and back
    QCOMPARE(model.eventIndex(0), size_t{8});
    QCOMPARE(model.rowCount(), 5);
    model.setTime(0.5);  // before the first event: nothing marked
    QCOMPARE(model.currentRow(), -1);
    QCOMPARE(model.eventIndex(0), size_t{0});
    model.setTime(99.0);  // past the end: the last 3
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.eventIndex(0), size_t{37});
    QCOMPARE(model.currentRow(), 2);
  }

  void markedRowIsRepainted() {
    const TraceTimeline timeline(steps(3));
    TraceEventModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setWindowSize(20, 20);  // everything fits: the window never moves
    model.setTimeline(&timeline);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    model.setTime(1.0055);  // event 5
    QCOMPARE(model.currentRow(), 5);
    QCOMPARE(changed.count(), 2);  // old mark (row 0) and new (row 5)
    QVERIFY(model.data(model.index(5, 0), Qt::BackgroundRole).value<QColor>().isValid());
    QVERIFY(!model.data(model.index(0, 0), Qt::BackgroundRole).isValid());
    // The marked row brings its own text colour, readable on its background
    // whatever the palette (a dark theme's text is light).
    QVERIFY(changed.first().at(2).value<QList<int>>().contains(Qt::ForegroundRole));
    QVERIFY(!model.data(model.index(0, 0), Qt::ForegroundRole).isValid());
    for (int column = 0; column < TraceEventModel::NumColumns; ++column) {
      const QColor background = model.data(model.index(5, column), Qt::BackgroundRole).value<QColor>();
      const QColor text = model.data(model.index(5, column), Qt::ForegroundRole).value<QColor>();
      QVERIFY(text.isValid());
      QVERIFY2(kvscope::ui::contrastRatio(text, background) >= 4.5, qPrintable(text.name()));
    }
  }

  void followsAGrowingTimeline() {
    TraceTimeline timeline;
    TraceEventModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setWindowSize(6, 0);
    model.setTimeline(&timeline);
    for (int batch = 0; batch < 5; ++batch) {
      timeline.append(steps(1, batch));
      model.setTime(timeline.end_time());
      QCOMPARE(model.rowCount(), std::min(6, 4 * (batch + 1)));
      QCOMPARE(model.eventIndex(model.rowCount() - 1), timeline.num_events() - 1);
      QCOMPARE(model.currentRow(), model.rowCount() - 1);
    }
    // refresh() keeps the window at its time: later events do not scroll it.
    model.setWindowSize(2, 2);
    model.setTime(1.0005);
    timeline.append(steps(1, 5));
    model.refresh();
    QCOMPARE(model.rowCount(), 3);
  }

  void cellValues() {
    std::vector<EngineEvent> log = {
        {2.0, T::Admit, 7, 0, 40, 0},
        {2.001, T::StepBegin, 0, 0, 12, 0},
        {2.0015, T::CopyOnWrite, 7, 1, 12, 40},
        {2.002, T::Preempt, 7, 0, 1, 0},
        {2.0025, T::Finish, 7, 1, static_cast<int64_t>(FinishReason::Stop), 0},
    };
    const TraceTimeline timeline(log);
    TraceEventModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setTimeline(&timeline);
    model.setTime(timeline.end_time());
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(cell(model, 0, TraceEventModel::Time), QStringLiteral("0.000"));
    QCOMPARE(cell(model, 2, TraceEventModel::Time), QStringLiteral("1.500"));
    QVERIFY(!model.data(model.index(0, TraceEventModel::Step)).isValid());  // before any step
    QCOMPARE(model.data(model.index(2, TraceEventModel::Step)).toLongLong(), qlonglong{12});
    QCOMPARE(cell(model, 2, TraceEventModel::Type), QStringLiteral("copy_on_write"));
    QCOMPARE(cell(model, 2, TraceEventModel::Request), QStringLiteral("7 #2"));  // as the tables name it
    QVERIFY(cell(model, 1, TraceEventModel::Request).isEmpty());
    QCOMPARE(cell(model, 0, TraceEventModel::Details), QStringLiteral("admitted, 40 tokens of prompt"));
    QCOMPARE(cell(model, 2, TraceEventModel::Details), QStringLiteral("copy-on-write block 12 -> 40"));
    QCOMPARE(cell(model, 3, TraceEventModel::Details), QStringLiteral("preempted (swap)"));
    QCOMPARE(cell(model, 4, TraceEventModel::Details), QStringLiteral("finished: stop"));
  }

  void describesEveryEvent() {
    auto words = [](T type, int64_t value = 0, int64_t value2 = 0) {
      return TraceEventModel::describe({0.0, type, 1, 0, value, value2});
    };
    QCOMPARE(words(T::StepBegin, 3), QStringLiteral("step 3 begins"));
    QCOMPARE(words(T::StepEnd, 96, 4), QStringLiteral("step ends: 96 tokens, 4 sequences"));
    QCOMPARE(words(T::StepEnd, 1, 1), QStringLiteral("step ends: 1 token, 1 sequence"));
    QCOMPARE(words(T::Schedule, 16), QStringLiteral("scheduled, 16 rows"));
    QCOMPARE(words(T::Schedule, 1), QStringLiteral("scheduled, 1 row"));
    QCOMPARE(words(T::Allocate, 1), QStringLiteral("allocated 1 block"));
    QCOMPARE(words(T::Allocate, 3), QStringLiteral("allocated 3 blocks"));
    QCOMPARE(words(T::CacheHit, 32), QStringLiteral("prefix-cache hit: 32 tokens of prompt"));
    QCOMPARE(words(T::Preempt, 0), QStringLiteral("preempted (recompute)"));
    QCOMPARE(words(T::SwapOut, 4), QStringLiteral("swapped out 4 blocks"));
    QCOMPARE(words(T::SwapIn, 4), QStringLiteral("swapped in 4 blocks"));
    QCOMPARE(words(T::Evict, 2), QStringLiteral("evicted 2 blocks of cached prefixes"));
    QCOMPARE(words(T::KvUsage, 10, 1), QStringLiteral("KV: 10 blocks used, 1 block cached-free"));
    QCOMPARE(words(T::Finish, static_cast<int64_t>(FinishReason::Length)), QStringLiteral("finished: length"));
    // A value the engine never writes (a hand-edited file) is named, not cast.
    QCOMPARE(words(T::Finish, 99), QStringLiteral("finished: unknown (99)"));
    QCOMPARE(words(T::Finish, -5), QStringLiteral("finished: unknown (-5)"));
  }
};

QTEST_GUILESS_MAIN(TraceEventModelTest)
#include "trace_event_model_test.moc"
