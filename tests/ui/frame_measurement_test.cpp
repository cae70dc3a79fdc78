// FrameMeasurement (app/gui/frame_measurement.h), the engine side of
// `kvscope --measure-frames`, on the random tiny model through the real
// worker: a workload that finishes ends the window at the worker's idle,
// with every decode step and token counted; one that outlasts the window
// ends it at the timeout. Offscreen, no files needed.
//   ctest --test-dir build -R frame_measurement_test --output-on-failure
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app_test_support.h"
#include "engine_host.h"
#include "engine_worker.h"
#include "frame_measurement.h"

using namespace kvscope;

namespace {

constexpr int kTimeoutMs = 60000;

QJsonObject parsed(const QSignalSpy& spy) {
  return QJsonDocument::fromJson(spy.at(0).at(0).toString().toUtf8()).object();
}

}  // namespace

class FrameMeasurementTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::prepareAppTest();
    QVERIFY(dir_.isValid());
    QString error;
    model_ = test::writeTinyChatModel(dir_, 4096, &error);
    QVERIFY2(!model_.isEmpty(), qPrintable(error));
  }

  void aFinishedWorkloadEndsTheWindowAtIdle() {
    gui::EngineHost host;
    gui::FrameMeasurement measurement(host.worker(), 60, 4);
    QSignalSpy measured(&measurement, &gui::FrameMeasurement::measured);
    loadTinyModel(host);
    if (QTest::currentTestFailed()) return;
    ui::WorkloadSpec spec;
    spec.num_requests = 4;
    spec.prompt_len = 24;
    spec.shared_prefix_len = 8;
    spec.output_len = 8;  // EOS ignored: 8 tokens each, the first from the prompt's step
    host.startWorkload(spec);
    QTRY_COMPARE_WITH_TIMEOUT(measured.count(), 1, kTimeoutMs);
    const QJsonObject m = parsed(measured);
    QCOMPARE(m.value("ended_by").toString(), QStringLiteral("idle"));
    QCOMPARE(m.value("workload").toInt(), 4);
    QCOMPARE(m.value("finished_requests").toInt(), 4);
    QCOMPARE(m.value("decode_tokens").toInt(), 4 * 7);
    QVERIFY(m.value("engine_steps").toInt() >= 8);  // at least the prompt's step and 7 decode steps
    QVERIFY(m.value("running_s").toDouble() < 60.0);
    QVERIFY(m.value("decode_tok_s").toDouble() > 0.0);
    QVERIFY(m.value("running").toObject().contains("p99_ms"));
    QVERIFY(m.value("loading").toObject().contains("p99_ms"));
    QCOMPARE(m.value("errors").toInt(), 0);
    QVERIFY(m.value("first_error").isNull());
    QTest::qWait(100);
    QCOMPARE(measured.count(), 1);  // once
  }

  // A workload the engine refuses runs nothing: the record says why, not
  // just "timeout" with nothing finished.
  void aRefusedWorkloadIsInTheRecord() {
    gui::EngineHost host;
    gui::FrameMeasurement measurement(host.worker(), 1, 2);
    QSignalSpy measured(&measurement, &gui::FrameMeasurement::measured);
    loadTinyModel(host);
    if (QTest::currentTestFailed()) return;
    ui::WorkloadSpec spec;
    spec.num_requests = 2;
    spec.prompt_len = 5000;  // the context holds 4096
    spec.output_len = 8;
    host.startWorkload(spec);
    QTRY_COMPARE_WITH_TIMEOUT(measured.count(), 1, kTimeoutMs);
    const QJsonObject m = parsed(measured);
    QCOMPARE(m.value("finished_requests").toInt(), 0);
    QVERIFY(m.value("errors").toInt() >= 1);
    QVERIFY2(m.value("first_error").toString().contains(QStringLiteral("Workload request")),
             qPrintable(m.value("first_error").toString()));
  }

  void aLongWorkloadEndsTheWindowAtTheTimeout() {
    gui::EngineHost host;
    gui::FrameMeasurement measurement(host.worker(), 1, 64);
    QSignalSpy measured(&measurement, &gui::FrameMeasurement::measured);
    loadTinyModel(host);
    if (QTest::currentTestFailed()) return;
    ui::WorkloadSpec spec;
    spec.num_requests = 64;
    spec.output_len = 3000;  // 192k tokens: far more than a second's work
    host.startWorkload(spec);
    QTRY_COMPARE_WITH_TIMEOUT(measured.count(), 1, kTimeoutMs);
    const QJsonObject m = parsed(measured);
    QCOMPARE(m.value("ended_by").toString(), QStringLiteral("timeout"));
    QCOMPARE(m.value("finished_requests").toInt(), 0);
    QVERIFY(m.value("engine_steps").toInt() > 0);
    QVERIFY(m.value("running_s").toDouble() >= 0.9);
  }

 private:
  // The tiny model on one thread, loaded (the measurement's window starts here).
  void loadTinyModel(gui::EngineHost& host) {
    EngineConfig config;
    config.model_path = model_.toStdString();
    config.num_threads = 1;
    QSignalSpy loaded(host.worker(), &gui::EngineWorker::modelLoaded);
    host.loadModel(config);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, kTimeoutMs);
  }

  QTemporaryDir dir_;
  QString model_;
};

QTEST_MAIN(FrameMeasurementTest)
#include "frame_measurement_test.moc"
