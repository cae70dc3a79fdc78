// The whole window against a real engine on a random tiny model (ChatML,
// byte-level BPE), wired exactly as the app is (connectWindowToEngine): send,
// stop, regenerate, edit and resend with the prefix-cache hit shown, new
// settings applied while a reply is written (nothing lost), and a bad model
// file that shows a dialog and keeps the loaded model. Offscreen.
//   ctest --test-dir build -R chat_session_test
#include <QFile>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QTemporaryDir>
#include <QtTest>

#include "app_test_support.h"
#include "chat_widget.h"
#include "conversation_list_widget.h"
#include "engine_host.h"
#include "main_window.h"
#include "models/chat_store.h"
#include "models/message_stats.h"
#include "window_wiring.h"

using namespace kvscope;

namespace {

constexpr int kTimeoutMs = 60000;
constexpr int kContext = 16384;
// The worker's signals reach a QSignalSpy directly, in the worker thread, so a
// fast one (a tiny model loads in milliseconds) can arrive before wait() is
// called: the tests poll the count instead.

ui::MessageStats lastReplyStats(const ui::ChatWidget& chat) {
  const auto stats = ui::messageStatsFromJson(chat.turns().back().stats_json);
  return stats.empty() ? ui::MessageStats{} : stats.front();
}

}  // namespace

class ChatSessionTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::prepareAppTest();
    QVERIFY(dir_.isValid());
    QString error;
    model_ = test::writeTinyChatModel(dir_, kContext, &error);
    QVERIFY2(!model_.isEmpty(), qPrintable(error));
  }

  void init() {
    window_ = std::make_unique<ui::MainWindow>(nullptr, dir_.filePath(QStringLiteral("chats-%1.sqlite").arg(++run_)));
    host_ = std::make_unique<gui::EngineHost>();
    gui::connectWindowToEngine(*window_, *host_);
    window_->loadEngine(config());
    QTRY_VERIFY_WITH_TIMEOUT(!window_->modelInfo().name.empty(), kTimeoutMs);  // the window knows
    ui::ConversationSettings settings = chat()->conversationSettings();
    settings.sampling.temperature = 0.0f;  // greedy: the same prompt gives the same reply
    settings.sampling.max_tokens = 12;
    chat()->setConversationSettings(settings);
  }

  void cleanup() {
    host_.reset();  // joins the engine thread before the window goes
    window_.reset();
  }

  void sendRegenerateAndEdit() {
    ui::ChatWidget* c = chat();
    c->sendPrompt(QStringLiteral("Hello there, tiny model."));
    QTRY_VERIFY_WITH_TIMEOUT(!c->busy(), kTimeoutMs);
    QCOMPARE(c->turns().size(), size_t(2));
    const QString first_reply = c->turns()[1].content;
    QVERIFY(lastReplyStats(*c).generated_tokens > 0);

    // Regenerate: same history, greedy, so the same reply; its prompt is cached.
    c->regenerate();
    QTRY_VERIFY_WITH_TIMEOUT(!c->busy(), kTimeoutMs);
    QCOMPARE(c->turns().size(), size_t(2));
    QCOMPARE(c->turns()[1].content, first_reply);
    QVERIFY2(lastReplyStats(*c).cached_prompt_tokens > 0, qPrintable(c->turns()[1].stats_json));

    c->sendPrompt(QStringLiteral("And a second question?"));
    QTRY_VERIFY_WITH_TIMEOUT(!c->busy(), kTimeoutMs);
    QCOMPARE(c->turns().size(), size_t(4));

    // Edit the second question: the first exchange is served from the prefix cache.
    c->editMessage(2);
    c->sendPrompt(QStringLiteral("And a different second question?"));
    QTRY_VERIFY_WITH_TIMEOUT(!c->busy(), kTimeoutMs);
    QCOMPARE(c->turns().size(), size_t(4));
    QCOMPARE(c->turns()[2].content, QStringLiteral("And a different second question?"));
    const ui::MessageStats edited = lastReplyStats(*c);
    QVERIFY2(edited.cached_prompt_tokens >= 16, qPrintable(c->turns()[3].stats_json));
    QVERIFY(c->renderedMarkdown().contains(QStringLiteral("prompt tokens from cache")));

    const auto saved = window_->chatStore()->messages(window_->currentConversation());
    QCOMPARE(saved.size(), size_t(4));
    QCOMPARE(saved[2].content, c->turns()[2].content);
    QCOMPARE(saved[3].content, c->turns()[3].content);
  }

  void stopEndsTheReply() {
    ui::ChatWidget* c = chat();
    ui::ConversationSettings settings = c->conversationSettings();
    settings.sampling.max_tokens = kContext - 64;  // far more than the round trip of a cancel
    settings.sampling.ignore_eos = true;
    c->setConversationSettings(settings);
    c->sendPrompt(QStringLiteral("Go on forever."));
    c->stop();  // before the engine has even taken it: cancelled as soon as it has
    QTRY_VERIFY_WITH_TIMEOUT(!c->busy(), kTimeoutMs);
    QCOMPARE(lastReplyStats(*c).finish, QStringLiteral("cancelled"));
    QVERIFY(lastReplyStats(*c).generated_tokens < settings.sampling.max_tokens);
    QCOMPARE(c->turns().size(), size_t(2));
  }

  void newSettingsKeepTheReplyGoing() {
    ui::ChatWidget* c = chat();
    ui::ConversationSettings settings = c->conversationSettings();
    settings.sampling.max_tokens = 4096;  // long enough to be mid-reply when the settings change
    settings.sampling.ignore_eos = true;
    c->setConversationSettings(settings);
    QSignalSpy started(host_->worker(), &gui::EngineWorker::requestStarted);
    QSignalSpy reconfigured(host_->worker(), &gui::EngineWorker::reconfigured);
    c->sendPrompt(QStringLiteral("A long reply, please."));
    QTRY_VERIFY_WITH_TIMEOUT(started.count() > 0, kTimeoutMs);
    EngineConfig changed = config();
    changed.block_size = 8;
    changed.paged = false;
    window_->loadEngine(changed);
    QTRY_VERIFY_WITH_TIMEOUT(reconfigured.count() > 0, kTimeoutMs);
    QVERIFY2(c->busy(), "the reply ended before the settings changed: nothing was tested");
    QTRY_VERIFY_WITH_TIMEOUT(!c->busy(), 4 * kTimeoutMs);
    const ui::MessageStats stats = lastReplyStats(*c);
    QCOMPARE(stats.finish, QStringLiteral("length"));
    QCOMPARE(stats.generated_tokens, settings.sampling.max_tokens);  // no token lost or repeated
    QVERIFY(stats.preemptions >= 1);  // re-queued by the new settings
    QCOMPARE(window_->engineConfig().block_size, 8);
    QVERIFY(!window_->engineConfig().paged);
  }

  // Ctrl+N while a reply is written: the reply stops and stays in its own
  // conversation, and the new chat starts empty (the stopped reply was once
  // added to it, shown and sent with its next prompt).
  void aNewChatWhileAReplyIsWrittenLeavesTheReplyInItsConversation() {
    qint64 first = -1;
    startLongReply(first);
    QVERIFY(first >= 0);
    window_->newConversation();
    QVERIFY(chat()->turns().empty());
    QVERIFY(!chat()->busy());
    std::vector<ui::StoredMessage> saved;
    waitUntilSaved(first, saved);
    QCOMPARE(saved[0].content, QStringLiteral("Go on forever."));
    QVERIFY(!saved[1].content.isEmpty());
    QCOMPARE(ui::messageStatsFromJson(saved[1].stats_json).front().finish, QStringLiteral("cancelled"));
    QTest::qWait(200);  // nothing more arrives for the new chat
    QVERIFY(chat()->turns().empty());

    ui::ConversationSettings settings = chat()->conversationSettings();
    settings.sampling.max_tokens = 4;
    settings.sampling.ignore_eos = true;
    chat()->setConversationSettings(settings);
    chat()->sendPrompt(QStringLiteral("hello?"));
    QTRY_VERIFY_WITH_TIMEOUT(!chat()->busy() && chat()->turns().size() == 2, kTimeoutMs);
    QCOMPARE(chat()->turns()[0].content, QStringLiteral("hello?"));
    QVERIFY(window_->currentConversation() != first);
    QCOMPARE(window_->chatStore()->messages(window_->currentConversation()).size(), size_t(2));
  }

  // Deleting the conversation whose reply is being written: the view empties
  // and stays empty; nothing of it reaches the next chat.
  void deletingTheConversationBeingWrittenEmptiesTheView() {
    qint64 first = -1;
    startLongReply(first);
    window_->conversationList()->deleteCurrent(/*confirm=*/false);
    QVERIFY(chat()->turns().empty());
    QTest::qWait(300);  // the stopped reply's end has arrived by now
    QVERIFY(chat()->turns().empty());
    QVERIFY(window_->chatStore()->messages(first).empty());
    ui::ConversationSettings settings = chat()->conversationSettings();
    settings.sampling.max_tokens = 4;
    chat()->setConversationSettings(settings);
    chat()->sendPrompt(QStringLiteral("hello?"));
    QTRY_VERIFY_WITH_TIMEOUT(!chat()->busy() && chat()->turns().size() == 2, kTimeoutMs);
    QCOMPARE(chat()->turns()[0].content, QStringLiteral("hello?"));
  }

  // Closing the window while a reply is written: the reply is stopped and
  // saved with its figures before the window goes (it once lost its text).
  void closingWhileAReplyIsWrittenSavesIt() {
    window_->show();
    qint64 first = -1;
    startLongReply(first);
    QVERIFY(!window_->close());  // held back until the reply is saved
    std::vector<ui::StoredMessage> saved;
    waitUntilSaved(first, saved);
    QVERIFY(!saved[1].content.isEmpty());
    QCOMPARE(ui::messageStatsFromJson(saved[1].stats_json).front().finish, QStringLiteral("cancelled"));
    QTRY_VERIFY_WITH_TIMEOUT(!window_->isVisible(), kTimeoutMs);
  }

  void aBadModelFileShowsADialogAndKeepsTheModel() {
    const QString bad = dir_.filePath(QStringLiteral("not-a-model.gguf"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not a GGUF file");
    f.close();
    QSignalSpy failed(host_->worker(), &gui::EngineWorker::loadFailed);
    EngineConfig c = config();
    c.model_path = bad.toStdString();
    window_->loadEngine(c);
    QTRY_VERIFY_WITH_TIMEOUT(failed.count() > 0, kTimeoutMs);
    QVERIFY(failed.at(0).at(1).toBool());  // the previous model was kept
    QTRY_VERIFY(window_->findChild<QMessageBox*>() != nullptr);
    const QString text = window_->findChild<QMessageBox*>()->text();
    QVERIFY2(text.contains(QStringLiteral("not-a-model.gguf")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("still loaded")), qPrintable(text));
    QCOMPARE(QString::fromStdString(window_->engineConfig().model_path), model_);
    // Still usable.
    chat()->sendPrompt(QStringLiteral("Still there?"));
    QTRY_VERIFY_WITH_TIMEOUT(chat()->turns().size() == 2 && !chat()->busy(), kTimeoutMs);
  }

 private:
  // A reply that runs long, started and writing when the test goes on; its
  // conversation into `conversation`. (Void: QVERIFY returns.)
  void startLongReply(qint64& conversation) {
    ui::ChatWidget* c = chat();
    ui::ConversationSettings settings = c->conversationSettings();
    settings.sampling.max_tokens = kContext - 64;
    settings.sampling.ignore_eos = true;
    c->setConversationSettings(settings);
    c->sendPrompt(QStringLiteral("Go on forever."));
    QTRY_VERIFY_WITH_TIMEOUT(c->activeRequest() != 0, kTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(!c->replySoFar().content.isEmpty(), kTimeoutMs);
    conversation = window_->currentConversation();
  }

  // The saved messages of `conversation` once its reply has ended (its stats written).
  void waitUntilSaved(qint64 conversation, std::vector<ui::StoredMessage>& saved) {
    QTRY_VERIFY_WITH_TIMEOUT(
        (saved = window_->chatStore()->messages(conversation), saved.size() == 2 && !saved[1].stats_json.isEmpty()),
        kTimeoutMs);
  }

  EngineConfig config() const {
    EngineConfig c;
    c.model_path = model_.toStdString();
    c.num_threads = 1;
    c.block_size = 4;  // small blocks: short prompts still fill whole, cacheable blocks
    c.num_blocks = kContext / 4 + 64;
    return c;
  }
  ui::ChatWidget* chat() const { return window_->chat(); }

  QTemporaryDir dir_;
  QString model_;
  int run_ = 0;
  std::unique_ptr<ui::MainWindow> window_;
  std::unique_ptr<gui::EngineHost> host_;
};

QTEST_MAIN(ChatSessionTest)
#include "chat_session_test.moc"
