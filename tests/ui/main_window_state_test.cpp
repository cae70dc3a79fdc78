// What MainWindow keeps and enables beyond one session's inspector (label
// `ui`, offscreen, no engine): the window's layout restored after close, the
// controls of a dock tab not shown out of the Tab chain, an unusable chat
// default written back once, Stop workload enabled only while one runs.
// Split from main_window_test.cpp, which tests the inspector and the chat.
#include <QAction>
#include <QDockWidget>
#include <QPlainTextEdit>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "chat_widget.h"
#include "dock_share_keeper.h"
#include "engine_types.h"
#include "main_window.h"
#include "models/conversation_settings.h"

using namespace kvscope;

class MainWindowStateTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // QSettings go to a test location
    QApplication::setOrganizationName(QStringLiteral("kvscope-test"));
    ui::registerEngineMetaTypes();
  }

  // The window's size and its docks' arrangement come back as they were
  // left (they reset to the designed layout on every start). Closing saves
  // them; restoreLayout(), which main() calls, applies them.
  void layoutComesBackAfterClose() {
    QTemporaryDir dir;
    QSize size;
    {
      ui::MainWindow first(nullptr, dir.filePath(QStringLiteral("chats.sqlite")));
      first.show();
      QVERIFY(QTest::qWaitForWindowExposed(&first));
      first.resize(1100, 700);
      QVERIFY(first.showPanel(QStringLiteral("trace")));
      auto* prefixes = first.findChild<QDockWidget*>(QStringLiteral("shared_prefixes_dock"));
      QVERIFY(prefixes);
      prefixes->close();
      QTRY_COMPARE(first.size(), QSize(1100, 700));
      size = first.size();
      QVERIFY(first.close());
    }
    ui::MainWindow second(nullptr, dir.filePath(QStringLiteral("chats.sqlite")));
    QVERIFY(second.restoreLayout());
    second.show();
    QVERIFY(QTest::qWaitForWindowExposed(&second));
    QCOMPARE(second.size(), size);
    QVERIFY(second.findChild<QDockWidget*>(QStringLiteral("shared_prefixes_dock"))->isHidden());
    // Of the tabbed docks, the one raised is the one drawn.
    QVERIFY(!second.findChild<QDockWidget*>(QStringLiteral("trace_dock"))->visibleRegion().isEmpty());
    QVERIFY(second.findChild<QDockWidget*>(QStringLiteral("plots_dock"))->visibleRegion().isEmpty());
  }

  // A window made narrow and then wide again gives the docks back their
  // share of it (QMainWindow gave all the width back to the chat, leaving
  // the inspector squeezed, and saved it so); a dragged edge is kept.
  void docksKeepTheirShareOfAResizedWindow() {
    QTemporaryDir dir;
    ui::MainWindow window(nullptr, dir.filePath(QStringLiteral("chats.sqlite")));
    window.resize(1500, 920);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTRY_COMPARE(window.width(), 1500);
    auto* inspector = window.findChild<QDockWidget*>(QStringLiteral("kv_blocks_dock"));
    auto* list = window.findChild<QDockWidget*>(QStringLiteral("conversations_dock"));
    // The inspector made 700 px wide, its share taken as at the end of a
    // drag of its edge (QTest's mouse events do not drive QMainWindow's
    // separator; a drag under Xvfb with xdotool did).
    window.resizeDocks({inspector}, {700}, Qt::Horizontal);
    QTRY_VERIFY2(std::abs(inspector->width() - 700) <= 12, qPrintable(QString::number(inspector->width())));
    auto* keeper = window.findChild<ui::DockShareKeeper*>();
    QVERIFY(keeper);
    keeper->rememberShares();
    const int wide = inspector->width();
    const int list_wide = list->width();
    window.resize(780, 500);  // near the window's minimum width
    QTRY_COMPARE(window.width(), 780);
    QTest::qWait(50);
    QVERIFY2(inspector->width() < wide * 2 / 3, qPrintable(QStringLiteral("%1 px, %2 before").arg(inspector->width()).arg(wide)));
    window.resize(1500, 920);
    QTRY_COMPARE(window.width(), 1500);
    QTRY_VERIFY2(std::abs(inspector->width() - wide) <= 12,
                 qPrintable(QStringLiteral("%1 px, %2 before").arg(inspector->width()).arg(wide)));
    QVERIFY2(std::abs(list->width() - list_wide) <= 12,
             qPrintable(QStringLiteral("%1 px, %2 before").arg(list->width()).arg(list_wide)));
    // In between, the same share: 700 of 1500 is 467 of 1000.
    window.resize(1000, 700);
    QTRY_COMPARE(window.width(), 1000);
    QTRY_VERIFY2(std::abs(inspector->width() - wide * 1000 / 1500) <= 12, qPrintable(QString::number(inspector->width())));
    // A click that moves no edge, in a narrow window where the docks sit at
    // their minimum, takes no share from them.
    window.resize(780, 500);
    QTRY_COMPARE(window.width(), 780);
    QTest::qWait(50);
    QTest::mouseClick(&window, Qt::LeftButton, {}, QPoint(inspector->x() - 3, inspector->y() + 10));
    QTest::qWait(50);
    window.resize(1500, 920);
    QTRY_COMPARE(window.width(), 1500);
    QTRY_VERIFY2(std::abs(inspector->width() - wide) <= 12,
                 qPrintable(QStringLiteral("%1 px, %2 before").arg(inspector->width()).arg(wide)));
  }

  // A tabbed dock whose tab is not selected stays "visible" to Qt, off
  // screen: its controls were in the Tab chain. They are disabled until
  // their tab is selected.
  void tabsNotShownAreOutOfTheFocusChain() {
    ui::MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.showPanel(QStringLiteral("plots")));
    auto* trace = window.findChild<QDockWidget*>(QStringLiteral("trace_dock"));
    auto* plots = window.findChild<QDockWidget*>(QStringLiteral("plots_dock"));
    QTRY_VERIFY(!trace->widget()->isEnabled());
    QVERIFY(plots->widget()->isEnabled());
    QVERIFY(window.showPanel(QStringLiteral("trace")));
    QTRY_VERIFY(trace->widget()->isEnabled());
    QTRY_VERIFY(!plots->widget()->isEnabled());
    // Walking the whole Tab chain from the chat never lands in a disabled dock.
    QWidget* start = window.chat()->input();
    start->setFocus();
    QWidget* w = start;
    for (int i = 0; i < 200; ++i) {
      w = w->nextInFocusChain();
      if (w == start) break;
      if (w->focusPolicy() & Qt::TabFocus && w->isEnabled() && w->isVisible()) {
        QVERIFY2(!plots->isAncestorOf(w), qPrintable(w->objectName()));
      }
    }
  }

  // An unusable chat default is reported once and written back as the
  // default it fell back to (it stayed in the file and was "reset" on every
  // start).
  void anUnusableChatDefaultIsWrittenBack() {
    {
      QSettings settings;
      settings.setValue(QStringLiteral("chat/max_tokens"), QStringLiteral("zzz"));
    }
    {
      ui::MainWindow window;
      QTest::qWait(20);  // written once the event loop runs
    }
    QSettings settings;
    bool ok = false;
    const int saved = settings.value(QStringLiteral("chat/max_tokens")).toInt(&ok);
    QVERIFY2(ok, qPrintable(settings.value(QStringLiteral("chat/max_tokens")).toString()));
    QCOMPARE(saved, ui::ConversationSettings().sampling.max_tokens);
    settings.remove(QStringLiteral("chat"));
  }

  // Stop workload does something only while a workload runs: it is
  // disabled until the worker says one does (it clicked to no effect).
  void stopWorkloadIsEnabledOnlyWhileOneRuns() {
    ui::MainWindow window;
    auto* stop = window.findChild<QAction*>(QStringLiteral("stop_workload"));
    QVERIFY(stop);
    QVERIFY(!stop->isEnabled());
    window.onWorkloadActive(true);
    QVERIFY(stop->isEnabled());
    window.onWorkloadActive(false);
    QVERIFY(!stop->isEnabled());
  }
};

QTEST_MAIN(MainWindowStateTest)
#include "main_window_state_test.moc"
