// MainWindow without an engine: hand-made snapshots reach the block map, the
// sequence table and the plots; a click on a shared block picks its requests;
// a load failure leaves the window up; conversations are saved in and opened
// from a ChatStore, and an unusable store leaves the chat working. Offscreen.
//   ctest --test-dir build-gui -R main_window_test
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "block_map_widget.h"
#include "chat_widget.h"
#include "conversation_list_widget.h"
#include "main_window.h"
#include "models/block_table_model.h"
#include "models/chat_store.h"
#include "test_snapshots.h"

using namespace kvscope;

namespace {

// One user turn and its streamed reply, as the engine worker would drive them.
void chatOnce(ui::ChatWidget* chat, const QString& prompt, quint64 request_id, const QString& reply) {
  chat->sendPrompt(prompt);
  chat->onRequestStarted(request_id, true);
  chat->onTokens(request_id, reply);
  ui::FinishInfo done;
  done.reason = FinishReason::Stop;
  chat->onFinished(request_id, done);
}

void markLoaded(ui::ChatWidget* chat) {
  ModelInfo info;
  info.name = "test";
  info.context_length = 2048;
  chat->onModelLoaded(info);
}

}  // namespace

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

  void conversationsAreSavedAndOpened() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    qint64 first = -1;
    {
      ui::MainWindow window(nullptr, path);
      QVERIFY2(window.chatStore()->is_open(), qPrintable(window.chatStore()->lastError()));
      ui::ChatWidget* chat = window.chat();
      markLoaded(chat);
      chatOnce(chat, QStringLiteral("What is a KV block?\nsecond line"), 7, QStringLiteral("A page of keys."));
      first = window.currentConversation();
      QVERIFY(first >= 0);
      auto messages = window.chatStore()->messages(first);
      QCOMPARE(messages.size(), size_t(2));
      QCOMPARE(messages[1].content, QStringLiteral("A page of keys."));
      QCOMPARE(window.chatStore()->list_conversations()[0].title, QStringLiteral("What is a KV block?"));

      // New chat: an empty conversation, renamed after its first prompt.
      window.newConversation();
      const qint64 second = window.currentConversation();
      QVERIFY(second >= 0 && second != first);
      QVERIFY(chat->history().empty());
      window.newConversation();  // no second empty one
      QCOMPARE(window.currentConversation(), second);
      chatOnce(chat, QStringLiteral("Hello"), 8, QStringLiteral("Hi"));
      QCOMPARE(window.chatStore()->list_conversations()[0].title, QStringLiteral("Hello"));
      QCOMPARE(window.conversationList()->count(), 2);

      window.openConversation(first);
      QCOMPARE(chat->history().size(), size_t(2));
      QCOMPARE(chat->history()[0].content, std::string("What is a KV block?\nsecond line"));
      // Not while a reply is being written.
      chat->sendPrompt(QStringLiteral("more"));
      window.openConversation(second);
      QCOMPARE(window.currentConversation(), first);
      chat->onRequestStarted(9, true);
      ui::FinishInfo done;
      chat->onFinished(9, done);
      QCOMPARE(window.chatStore()->messages(first).size(), size_t(4));

      // Search narrows the list; deleting the open conversation clears the chat.
      window.conversationList()->searchField()->setText(QStringLiteral("kv block"));
      QCOMPARE(window.conversationList()->count(), 1);
      window.conversationList()->searchField()->clear();
      window.conversationList()->refresh(second);
      window.conversationList()->deleteCurrent(false);
      QCOMPARE(window.conversationList()->count(), 1);
    }
    ui::MainWindow again(nullptr, path);
    QCOMPARE(again.conversationList()->count(), 1);
    again.openConversation(first);
    QCOMPARE(again.chat()->history().size(), size_t(4));
  }

  void unusableStoreKeepsTheChat() {
    QTemporaryDir dir;
    ui::MainWindow window(nullptr, dir.path());  // a directory: cannot be a database
    QVERIFY(!window.chatStore()->is_open());
    QVERIFY(!window.conversationList()->searchField()->isEnabled());
    ui::ChatWidget* chat = window.chat();
    markLoaded(chat);
    chatOnce(chat, QStringLiteral("hello"), 7, QStringLiteral("hi"));
    QCOMPARE(chat->history().size(), size_t(2));
    QCOMPARE(window.currentConversation(), qint64(-1));
    window.newConversation();
    QVERIFY(chat->history().empty());
  }

  void ctrlFFocusesTheSearch() {
    QTemporaryDir dir;
    ui::MainWindow window(nullptr, dir.filePath(QStringLiteral("chats.sqlite")));
    window.show();
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    QTest::keyClick(&window, Qt::Key_F, Qt::ControlModifier);
    QTRY_VERIFY(window.conversationList()->searchField()->hasFocus());
  }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
