// The built app's --theme (label `ui model`, QProcess): a bad name is a
// usage error before anything starts; a good one is the run's theme, even
// in a screenshot run, which otherwise takes the system's (app/gui/main.cpp).
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "support/require_data_qt.h"
#include "support/test_paths.h"

class AppThemeRunTest : public QObject {
  Q_OBJECT
 private slots:
  void aThemeForTheRunIsCheckedAndUsed() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    // Scratch settings: neither the user's theme nor anything else of theirs.
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), home.filePath(QStringLiteral("config")));
    env.insert(QStringLiteral("XDG_DATA_HOME"), home.filePath(QStringLiteral("data")));
    QProcess bad;
    bad.setProcessEnvironment(env);
    bad.start(QStringLiteral(KVSCOPE_APP_PATH), {QStringLiteral("--theme"), QStringLiteral("plaid")});
    QVERIFY(bad.waitForFinished(30000));
    QCOMPARE(bad.exitCode(), 2);
    QVERIFY2(bad.readAllStandardError().contains("--theme 'plaid' is not system, light or dark"), "no message");

    const std::string model = kvscope::test::default_model_path();
    KVSCOPE_QREQUIRE_DATA(!model.empty(), kvscope::test::TestData::kDefaultModel);
    const QString shot = home.filePath(QStringLiteral("dark.png"));
    QProcess app;
    app.setProcessEnvironment(env);
    app.start(QStringLiteral(KVSCOPE_APP_PATH),
              {QStringLiteral("--model"), QString::fromStdString(model), QStringLiteral("--theme"),
               QStringLiteral("dark"), QStringLiteral("--screenshot"), shot, QStringLiteral("--screenshot-after-ms"),
               QStringLiteral("1500")});
    QVERIFY(app.waitForFinished(60000));
    QCOMPARE(app.exitCode(), 0);
    const QImage image(shot);
    QVERIFY(!image.isNull());
    // The window's background at its left edge, halfway down.
    const QColor background = image.pixelColor(2, image.height() / 2);
    QVERIFY2(background.lightness() < 90, qPrintable(background.name()));
  }
};

QTEST_GUILESS_MAIN(AppThemeRunTest)
#include "app_theme_run_test.moc"
