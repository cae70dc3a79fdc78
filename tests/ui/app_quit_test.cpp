// The built kvscope app quit mid-generation, the way a user closes its window:
// a workload and a chat reply are running on the default model when
// --screenshot saves the window and quits. The app must exit with status 0
// and without an AddressSanitizer, LeakSanitizer or UBSan report (registered
// in KVSCOPE_SANITIZE builds only, tests/ui/CMakeLists.txt). The screenshot
// file appearing marks the moment of the quit; from then the app has a
// second to exit, which holds only because the engine step in flight is
// interrupted at a layer boundary (a 512-token prefill step alone takes ~7 s
// under ASan). Skips when the model is absent.
//   ctest --test-dir build-asan -R app_quit_test
#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "support/require_data_qt.h"
#include "support/test_paths.h"

namespace {

constexpr int kQuitAfterMs = 3000;   // after the window shows; the model is loaded and generating by then
constexpr int kStartTimeoutMs = 60000;
constexpr int kExitBudgetMs = 1000;  // what the issue asks: gone within a second of the quit
constexpr int kExitWaitMs = 20000;   // then killed, to report a hang rather than time out

}  // namespace

class AppQuitTest : public QObject {
  Q_OBJECT
 private slots:
  void quitMidGenerationExitsCleanly() {
    const std::string model = kvscope::test::default_model_path();
    KVSCOPE_QREQUIRE_DATA(!model.empty(), kvscope::test::TestData::kDefaultModel);
    QTemporaryDir home;
    QVERIFY(home.isValid());
    const QString shot = home.filePath(QStringLiteral("shot.png"));

    // The app keeps its settings and conversations under the XDG folders:
    // point them at a scratch folder so the test neither reads nor writes the
    // user's own.
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), home.filePath(QStringLiteral("config")));
    env.insert(QStringLiteral("XDG_DATA_HOME"), home.filePath(QStringLiteral("data")));
    QProcess app;
    app.setProcessEnvironment(env);
    app.start(QStringLiteral(KVSCOPE_APP_PATH),
              {QStringLiteral("--model"), QString::fromStdString(model), QStringLiteral("--workload"),
               QStringLiteral("32"), QStringLiteral("--prompt"), QStringLiteral("Tell me a story"),
               QStringLiteral("--screenshot"), shot, QStringLiteral("--screenshot-after-ms"),
               QString::number(kQuitAfterMs)});
    QVERIFY2(app.waitForStarted(), qPrintable(app.errorString()));

    // The screenshot is saved right before QApplication::exit().
    QElapsedTimer since_start;
    since_start.start();
    while (!QFileInfo::exists(shot) && app.state() != QProcess::NotRunning &&
           since_start.elapsed() < kStartTimeoutMs)
      app.waitForFinished(5);
    QElapsedTimer since_quit;
    since_quit.start();
    const bool exited = app.waitForFinished(kExitWaitMs);
    const qint64 exit_ms = since_quit.elapsed();
    if (!exited) app.kill();
    const QString err = QString::fromLocal8Bit(app.readAllStandardError());

    QVERIFY2(QFileInfo::exists(shot), qPrintable(QStringLiteral("no screenshot, stderr:\n") + err));
    QVERIFY2(exited, qPrintable(QStringLiteral("the app did not exit within %1 ms of the quit").arg(kExitWaitMs)));
    qInfo("exited %lld ms after the quit", static_cast<long long>(exit_ms));
    for (const char* report : {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"})
      QVERIFY2(!err.contains(QLatin1String(report)), qPrintable(err));
    QCOMPARE(app.exitStatus(), QProcess::NormalExit);
    QVERIFY2(app.exitCode() == 0, qPrintable(QStringLiteral("exit code %1, stderr:\n%2").arg(app.exitCode()).arg(err)));
    QVERIFY2(exit_ms < kExitBudgetMs,
             qPrintable(QStringLiteral("the app took %1 ms to exit after the quit").arg(exit_ms)));
  }
};

QTEST_GUILESS_MAIN(AppQuitTest)
#include "app_quit_test.moc"
