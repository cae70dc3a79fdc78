// MainWindow without an engine: hand-made snapshots reach the block map, the
// sequence table and the plots; a click on a shared block picks its requests;
// a load failure leaves the window up. Offscreen.
//   ctest --test-dir build-gui -R main_window_test
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QStandardPaths>
#include <QTableView>
#include <QtTest>

#include "block_map_widget.h"
#include "chat_widget.h"
#include "main_window.h"
#include "models/block_table_model.h"
#include "test_snapshots.h"

using namespace kvscope;

class MainWindowTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // QSettings go to a test location
    QApplication::setOrganizationName(QStringLiteral("kvscope-test"));
    ui::registerEngineMetaTypes();
  }

  void snapshotsReachTheInspector() {
    ui::MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    for (int n : {1, 4, 9, 2}) window.onSnapshot(test::makeSnapshot(n, 3, 1, 256));
    QCOMPARE(window.blockTableModel()->rowCount(), 2);
    auto* map = window.findChild<ui::BlockMapWidget*>();
    QVERIFY(map);
    QTest::qWait(20);
    // Click the first cell (block 0, shared by both sequences).
    const QPoint first(6, 6);
    QCOMPARE(map->blockAt(first), 0);
    QTest::mouseClick(map, Qt::LeftButton, {}, first);
    QCOMPARE(map->selectedRequests().size(), size_t(2));
    const QImage image = window.grab().toImage();
    QVERIFY(!image.isNull());
  }

  void loadFailureKeepsTheWindowUp() {
    ui::MainWindow window;
    window.show();
    window.onLoadFailed(QStringLiteral("tensor blk.3.attn_q.weight: type 99 is not supported"));
    QTRY_VERIFY(window.findChild<QMessageBox*>() != nullptr);
    QVERIFY(window.findChild<QMessageBox*>()->text().contains(QStringLiteral("type 99")));
    QVERIFY(window.isVisible());
  }

  void chatSendsTheHistory() {
    ui::MainWindow window;
    ui::ChatWidget* chat = window.chat();
    ModelInfo info;
    info.name = "test";
    info.context_length = 2048;
    chat->onModelLoaded(info);
    QSignalSpy sent(chat, &ui::ChatWidget::sendRequested);
    chat->sendPrompt(QStringLiteral("hello"));
    QCOMPARE(sent.count(), 1);
    QVERIFY(chat->busy());
    chat->onRequestStarted(7, true);
    chat->onTokens(7, QStringLiteral("Hi **there**"));
    ui::FinishInfo done;
    done.reason = FinishReason::Stop;
    chat->onFinished(7, done);
    QVERIFY(!chat->busy());
    QCOMPARE(chat->history().size(), size_t(2));
    QCOMPARE(chat->history()[1].content, std::string("Hi **there**"));
    // Ctrl+Enter in the input box sends it.
    auto* input = chat->findChild<QPlainTextEdit*>();
    QVERIFY(input);
    QTest::keyClicks(input, QStringLiteral("again"));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    QCOMPARE(sent.count(), 2);
    QVERIFY(input->toPlainText().isEmpty());
    const auto history = sent.at(1).at(0).value<ui::ChatHistory>();
    QCOMPARE(history.size(), size_t(3));
    QCOMPARE(history[2].content, std::string("again"));
    // Stop asks to cancel the running request.
    QSignalSpy stopped(chat, &ui::ChatWidget::stopRequested);
    chat->onRequestStarted(8, true);
    chat->stop();
    QCOMPARE(stopped.count(), 1);
    QCOMPARE(stopped.at(0).at(0).value<quint64>(), quint64{8});
  }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
