// InvarianceRunner on the random tiny model (no download): the Invariance
// panel wired to it as the app wires it gets its verdict while the GUI
// thread keeps running; a cancelled check ends with "cancelled" within a
// step; a new run cancels the one before; destroying the runner mid-check
// joins its thread promptly.
//   ctest --test-dir build -R invariance_runner_test --output-on-failure
#include <QElapsedTimer>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "app_test_support.h"
#include "invariance_panel.h"
#include "invariance_runner.h"
#include "models/invariance_verdict_model.h"
#include "window_wiring.h"

using namespace kvscope;

namespace {

constexpr int kTimeoutMs = 60000;

}  // namespace

class InvarianceRunnerTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::prepareAppTest();
    QVERIFY(dir_.isValid());
    QString error;
    model_ = test::writeTinyChatModel(dir_, 4096, &error);
    QVERIFY2(!model_.isEmpty(), qPrintable(error));
  }

  void panelGetsTheVerdictWhileTheGuiRuns() {
    ui::InvariancePanel panel;
    gui::InvarianceRunner runner;
    gui::connectInvariancePanel(panel, runner);
    panel.setBaseConfig(config());
    panel.setSpecB(QStringLiteral("cascade=on,block_size=4,concurrency=4"));
    // Over 64 tokens (one per byte, about), so that the companions share two
    // whole attention tiles of it with the checked request: a cascade pass.
    const QString prompt = QStringLiteral("Hello there, tiny model. ").repeated(4);
    panel.setPromptSource([prompt] { return ui::ChatHistory{{"user", prompt.toStdString()}}; });
    int ticks = 0;
    QTimer ticker;
    ticker.setInterval(2);
    connect(&ticker, &QTimer::timeout, this, [&ticks] { ++ticks; });
    ticker.start();
    panel.run();
    QCOMPARE(runner.numRunning(), 1);  // started, not run here
    QVERIFY(panel.running());
    QTRY_VERIFY_WITH_TIMEOUT(!panel.running(), kTimeoutMs);
    QCOMPARE(runner.numRunning(), 0);
    QCOMPARE(panel.model()->rowCount(), 1);
    QVERIFY2(ticks > 0, "the GUI thread's event loop did not run during the check");
    // The engine's promise: greedy output does not depend on these settings.
    QVERIFY2(panel.statusText().contains(QStringLiteral("The prompt is identical under A and B.")), qPrintable(panel.statusText()));
    // B really ran cascade passes (the companions share the prompt's tiles);
    // A, alone, none.
    const QRegularExpression cascade_steps(QStringLiteral("B: .* ([0-9]+) with a cascade pass"));
    const QRegularExpressionMatch b = cascade_steps.match(panel.statusText());
    QVERIFY2(b.hasMatch() && b.captured(1).toInt() > 0, qPrintable(panel.statusText()));
    QVERIFY2(panel.statusText().contains(QRegularExpression(QStringLiteral("A: .* 0 with a cascade pass"))),
             qPrintable(panel.statusText()));
    QCOMPARE(QString::fromStdString(panel.model()->verdicts()[0].prompt), prompt);
  }

  void cancelEndsTheCheck() {
    gui::InvarianceRunner runner;
    QSignalSpy progress(&runner, &gui::InvarianceRunner::progress);
    QSignalSpy finished(&runner, &gui::InvarianceRunner::finished);
    runner.run(7, longJob());
    QTRY_VERIFY_WITH_TIMEOUT(progress.count() > 0, kTimeoutMs);
    QCOMPARE(progress.first().at(0).value<quint64>(), quint64{7});
    QElapsedTimer timer;
    timer.start();
    runner.cancel(7);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kTimeoutMs);
    qInfo("cancelled within %lld ms", static_cast<long long>(timer.elapsed()));
    QCOMPARE(finished.first().at(0).value<quint64>(), quint64{7});
    QCOMPARE(finished.first().at(1).value<ui::InvarianceOutcome>().error, std::string("cancelled"));
    QCOMPARE(runner.numRunning(), 0);
  }

  void aNewRunCancelsTheOldOne() {
    gui::InvarianceRunner runner;
    QSignalSpy finished(&runner, &gui::InvarianceRunner::finished);
    runner.run(1, longJob());
    ui::InvarianceJob quick = longJob();
    quick.prompts.resize(1);
    quick.options.max_tokens = 4;
    runner.run(2, quick);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, kTimeoutMs);
    std::map<quint64, ui::InvarianceOutcome> by_id;
    for (const auto& args : finished) by_id[args.at(0).value<quint64>()] = args.at(1).value<ui::InvarianceOutcome>();
    QCOMPARE(by_id[1].error, std::string("cancelled"));
    QVERIFY2(by_id[2].ok(), by_id[2].error.c_str());
    QCOMPARE(by_id[2].report.prompts.size(), size_t{1});
  }

  void destroyingTheRunnerJoinsItsCheck() {
    auto runner = std::make_unique<gui::InvarianceRunner>();
    QSignalSpy progress(runner.get(), &gui::InvarianceRunner::progress);
    runner->run(3, longJob());
    QTRY_VERIFY_WITH_TIMEOUT(progress.count() > 0, kTimeoutMs);
    QElapsedTimer timer;
    timer.start();
    runner.reset();
    QVERIFY2(timer.elapsed() < 5000, qPrintable(QStringLiteral("took %1 ms").arg(timer.elapsed())));
  }

 private:
  EngineConfig config() const {
    EngineConfig c;
    c.model_path = model_.toStdString();
    c.num_threads = 1;
    c.kv_budget_bytes = 32ll << 20;
    return c;
  }

  // Many prompts, long replies: seconds of work to cancel in the middle of.
  ui::InvarianceJob longJob() const {
    ui::InvarianceJob job;
    job.a = *parse_invariance_side("", config());
    job.b = *parse_invariance_side("concurrency=8", config());
    for (int i = 0; i < 64; ++i) job.prompts.emplace_back("Prompt number " + std::to_string(i));
    job.options.max_tokens = 1000;
    job.options.sampling.ignore_eos = true;
    return job;
  }

  QTemporaryDir dir_;
  QString model_;
};

QTEST_MAIN(InvarianceRunnerTest)
#include "invariance_runner_test.moc"
