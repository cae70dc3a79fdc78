// FrameTimeProbe: a blocked event loop shows up as one long gap; percentiles
// by nearest rank.
//   ctest --test-dir build -R frame_time_probe_test
#include <thread>

#include <QtTest>

#include "models/frame_time_probe.h"

using namespace kvscope::ui;

class FrameTimeProbeTest : public QObject {
  Q_OBJECT
 private slots:
  void percentileByNearestRank() {
    QCOMPARE(percentileOf({}, 99), 0.0);
    QCOMPARE(percentileOf({5}, 50), 5.0);
    std::vector<double> v;
    for (int i = 100; i >= 1; --i) v.push_back(i);
    QCOMPARE(percentileOf(v, 50), 50.0);
    QCOMPARE(percentileOf(v, 99), 99.0);
    QCOMPARE(percentileOf(v, 100), 100.0);
    QCOMPARE(percentileOf(v, 0), 1.0);
  }

  void aBlockedLoopIsALongGap() {
    FrameTimeProbe probe;
    probe.start();
    // Long enough on each side of the block for several ordinary frames even
    // on a loaded machine (it failed once with 60 ms while two builds ran).
    QTest::qWait(250);
    // Block the GUI thread as a slow synchronous call would.
    QTimer::singleShot(0, [] { std::this_thread::sleep_for(std::chrono::milliseconds(120)); });
    QTest::qWait(250);
    probe.stop();
    const FrameTimeStats s = probe.stats();
    QVERIFY(s.count >= 3);
    QVERIFY2(s.max_ms >= 110.0, qPrintable(FrameTimeProbe::toJson(s)));
    QVERIFY(s.over_16ms >= 1);
    QVERIFY(s.median_ms < s.max_ms);
    probe.reset();
    QCOMPARE(probe.stats().count, 0);
  }
};

QTEST_GUILESS_MAIN(FrameTimeProbeTest)
#include "frame_time_probe_test.moc"
