// The app's own theme choice (app_theme.h): Dark and Light set the Fusion
// style and their palette at run time, System gives back what the app
// started with, the dark palette keeps its text readable, the choice is
// kept in the settings, and View > Theme applies and keeps it.
#include <QAction>
#include <QApplication>
#include <QSettings>
#include <QStandardPaths>
#include <QStyle>
#include <QtTest>

#include "app_theme.h"
#include "engine_types.h"
#include "main_window.h"
#include "palette_colors.h"

using namespace kvscope::ui;

class AppThemeTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setOrganizationName(QStringLiteral("kvscope-test"));
    QSettings().remove(QStringLiteral("ui/theme"));
    registerEngineMetaTypes();
  }

  void keysRoundTrip() {
    for (AppTheme t : {AppTheme::System, AppTheme::Light, AppTheme::Dark}) QCOMPARE(appThemeFromKey(appThemeKey(t)), t);
    QCOMPARE(appThemeFromKey(QStringLiteral(" Dark ")), AppTheme::Dark);
    QVERIFY(!appThemeFromKey(QStringLiteral("solarized")));
  }

  void darkPaletteReads() {
    const QPalette p = darkAppPalette();
    QVERIFY(isDarkPalette(p));
    QVERIFY(contrastRatio(p.color(QPalette::Text), p.color(QPalette::Base)) >= 7.0);
    QVERIFY(contrastRatio(p.color(QPalette::WindowText), p.color(QPalette::Window)) >= 7.0);
    QVERIFY(contrastRatio(p.color(QPalette::ButtonText), p.color(QPalette::Button)) >= 7.0);
    QVERIFY(contrastRatio(p.color(QPalette::HighlightedText), p.color(QPalette::Highlight)) >= 4.5);
    QVERIFY(contrastRatio(p.color(QPalette::Disabled, QPalette::Text), p.color(QPalette::Base)) >= 3.0);
  }

  void switchesAndComesBack() {
    const QColor started = QApplication::palette().color(QPalette::Window);
    const QString style = QApplication::style()->name();
    applyAppTheme(AppTheme::Dark);
    QCOMPARE(currentAppTheme(), AppTheme::Dark);
    QVERIFY(isDarkPalette(QApplication::palette()));
    QCOMPARE(QApplication::style()->name().toLower(), QStringLiteral("fusion"));
    applyAppTheme(AppTheme::Light);
    QVERIFY(!isDarkPalette(QApplication::palette()));
    applyAppTheme(AppTheme::System);
    QCOMPARE(currentAppTheme(), AppTheme::System);
    QCOMPARE(QApplication::palette().color(QPalette::Window), started);
    QCOMPARE(QApplication::style()->name(), style);
  }

  void theChoiceIsKept() {
    QCOMPARE(savedAppTheme(), AppTheme::System);  // none yet
    saveAppTheme(AppTheme::Dark);
    QCOMPARE(savedAppTheme(), AppTheme::Dark);
    QSettings().setValue(QStringLiteral("ui/theme"), QStringLiteral("plaid"));
    QCOMPARE(savedAppTheme(), AppTheme::System);  // unreadable: the default
    QSettings().remove(QStringLiteral("ui/theme"));
  }

  void theViewMenuAppliesAndKeepsIt() {
    MainWindow window;
    auto* dark = window.findChild<QAction*>(QStringLiteral("theme_dark"));
    auto* system = window.findChild<QAction*>(QStringLiteral("theme_system"));
    QVERIFY(dark && system);
    QVERIFY(system->isChecked());
    dark->trigger();
    QVERIFY(dark->isChecked());
    QVERIFY(!system->isChecked());
    QCOMPARE(currentAppTheme(), AppTheme::Dark);
    QCoreApplication::processEvents();  // the palette reaches widgets by event
    QVERIFY(isDarkPalette(window.palette()));
    QCOMPARE(savedAppTheme(), AppTheme::Dark);
    system->trigger();
    QCOMPARE(currentAppTheme(), AppTheme::System);
    QCOMPARE(savedAppTheme(), AppTheme::System);
    QSettings().remove(QStringLiteral("ui/theme"));
  }
};

QTEST_MAIN(AppThemeTest)
#include "app_theme_test.moc"
