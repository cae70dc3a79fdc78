// MainWindow without an engine: hand-made snapshots reach the block map, the
// sequence table and the plots; a click on a shared block picks its requests;
// a load failure leaves the window up; conversations are saved in and opened
// from a ChatStore, and an unusable store leaves the chat working; the block
// map's legend names the cascade mark, and the Invariance panel compares the
// loaded settings on the conversation's last prompt. Offscreen.
//   ctest --test-dir build-gui -R main_window_test
#include <QJsonDocument>
#include <QAbstractButton>
#include <QAction>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QSlider>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QStandardPaths>
#include <QTableView>
#include <QTextBrowser>
#include <QTemporaryDir>
#include <QSettings>
#include <QStatusBar>
#include <QtTest>

#include "block_map_widget.h"
#include "chat_widget.h"
#include "conversation_list_widget.h"
#include "invariance_panel.h"
#include "live_label.h"
#include "main_window.h"
#include "models/block_table_model.h"
#include "models/chat_store.h"
#include "models/conversation_settings.h"
#include "test_snapshots.h"

using namespace kvscope;

namespace {

// One user turn and its streamed reply, as the engine worker would drive them.
void chatOnce(ui::ChatWidget* chat, const QString& prompt, quint64 request_id, const QString& reply) {
  chat->sendPrompt(prompt);
  chat->onRequestStarted(request_id, true);
  chat->onTokens(request_id, 0, reply);
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

  // The engine's warnings about the settings in force (threads lowered, a
  // context above the trained one) reach the status line, on load and on
  // reconfigure.
  void settingWarningsReachTheStatusLine() {
    ui::MainWindow window;
    window.show();
    kvscope::ModelInfo info;
    info.name = "tiny";
    info.num_kv_blocks = 8;
    info.block_size = 16;
    info.setting_warnings = {"threads = 64 is more than the 2 CPUs this process may use; using 2"};
    window.onModelLoaded(info);
    QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("threads = 64 is more than")),
             qPrintable(window.statusBar()->currentMessage()));
    info.setting_warnings = {"max model length 99999 is above the model's trained context of 2048 tokens"};
    window.onReconfigured(info);
    QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("above the model's trained context")),
             qPrintable(window.statusBar()->currentMessage()));
  }

  // The status bar names the KV mode and whether prefix caching is in force:
  // contiguous KV hashes no prefix, so it says so instead of "on".
  // The status bar counts the steps done; the panels name a step by its
  // 0-based number, one less ("step 1965" beside "Last step (1964)").
  void theStatusBarCountsStepsDone() {
    ui::MainWindow window;
    window.setPersistSettings(false);
    auto s = std::make_shared<kvscope::EngineSnapshot>(*test::makeSnapshot(2, 3, 1));
    s->step = 1965;
    s->last_step.step = 1964;
    window.onSnapshot(s);
    QString text;
    for (ui::LiveLabel* label : window.statusBar()->findChildren<ui::LiveLabel*>()) {
      if (label->text().contains(QStringLiteral("running"))) text = label->text();
    }
    QVERIFY2(text.startsWith(QStringLiteral("1965 steps · running")), qPrintable(text));
  }

  // The KV line's counters say since when they count (a learner read
  // "prefix hits" as the last workload's share).
  void theKvLineSaysSinceWhenItCounts() {
    ui::MainWindow window;
    window.setPersistSettings(false);
    window.onSnapshot(test::makeSnapshot(2, 3, 1));
    bool found = false;
    for (ui::LiveLabel* label : window.findChildren<ui::LiveLabel*>()) {
      if (!label->text().contains(QStringLiteral("prefix hits"))) continue;
      found = true;
      QVERIFY2(label->toolTip().contains(QStringLiteral("since the KV pool was built")), qPrintable(label->toolTip()));
    }
    QVERIFY(found);
  }

  void theStatusBarSaysContiguousModeHasNoPrefixCache() {
    ui::MainWindow window;
    window.setPersistSettings(false);
    kvscope::ModelInfo info;
    info.name = "tiny";
    info.num_kv_blocks = 8;
    info.block_size = 16;
    kvscope::EngineConfig config;
    config.model_path = "/models/tiny.gguf";
    const auto summary = [&window] {
      for (ui::LiveLabel* label : window.statusBar()->findChildren<ui::LiveLabel*>()) {
        if (label->text().contains(QStringLiteral("KV blocks"))) return label->text();
      }
      return QString();
    };
    window.loadEngine(config);
    window.onModelLoaded(info);
    QVERIFY2(summary().contains(QStringLiteral("paged · prefix caching on")), qPrintable(summary()));
    config.paged = false;
    window.loadEngine(config);
    window.onReconfigured(info);
    QVERIFY2(summary().contains(QStringLiteral("contiguous · no prefix caching (contiguous)")), qPrintable(summary()));
  }

  // Ctrl+N puts the cursor in the new chat's message box: what was typed
  // right after it once went nowhere.
  void aNewChatTakesTheKeyboard() {
    QTemporaryDir dir;
    ui::MainWindow window(nullptr, dir.filePath(QStringLiteral("chats.sqlite")));
    markLoaded(window.chat());
    window.show();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    window.conversationList()->setFocus();
    window.newConversation();
    QTRY_COMPARE(QApplication::focusWidget(), static_cast<QWidget*>(window.chat()->input()));
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
    chat->onTokens(7, 0, QStringLiteral("Hi **there**"));
    ui::FinishInfo done;
    done.reason = FinishReason::Stop;
    chat->onFinished(7, done);
    QVERIFY(!chat->busy());
    QCOMPARE(chat->turns().size(), size_t(2));
    QCOMPARE(chat->turns()[1].content, QStringLiteral("Hi **there**"));
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
      QVERIFY(chat->turns().empty());
      window.newConversation();  // no second empty one
      QCOMPARE(window.currentConversation(), second);
      chatOnce(chat, QStringLiteral("Hello"), 8, QStringLiteral("Hi"));
      QCOMPARE(window.chatStore()->list_conversations()[0].title, QStringLiteral("Hello"));
      QCOMPARE(window.conversationList()->count(), 2);

      window.openConversation(first);
      QCOMPARE(chat->turns().size(), size_t(2));
      QCOMPARE(chat->turns()[0].content, QStringLiteral("What is a KV block?\nsecond line"));
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
      // A search that hides the open conversation, cleared: it is selected again.
      window.conversationList()->searchField()->setText(QStringLiteral("hello"));
      QCOMPARE(window.conversationList()->count(), 1);
      QCOMPARE(window.conversationList()->currentConversation(), qint64(-1));
      window.conversationList()->searchField()->clear();
      QCOMPARE(window.conversationList()->currentConversation(), first);
      // Opened from the list (a click: no refresh), then hidden and shown again.
      window.openConversation(second);
      window.conversationList()->searchField()->setText(QStringLiteral("kv block"));
      window.conversationList()->searchField()->clear();
      QCOMPARE(window.conversationList()->currentConversation(), second);
      window.conversationList()->refresh(second);
      window.conversationList()->deleteCurrent(false);
      QCOMPARE(window.conversationList()->count(), 1);
    }
    ui::MainWindow again(nullptr, path);
    QCOMPARE(again.conversationList()->count(), 1);
    again.openConversation(first);
    QCOMPARE(again.chat()->turns().size(), size_t(4));
  }

  void unusableStoreKeepsTheChat() {
    QTemporaryDir dir;
    ui::MainWindow window(nullptr, dir.path());  // a directory: cannot be a database
    QVERIFY(!window.chatStore()->is_open());
    QVERIFY(!window.conversationList()->searchField()->isEnabled());
    // The startup message takes the model summary's place in the status bar;
    // shown before the window was, it was drawn over it.
    window.show();
    QTRY_VERIFY(window.statusBar()->currentMessage().contains(QStringLiteral("Conversations are not saved")));
    for (const ui::LiveLabel* label : window.statusBar()->findChildren<ui::LiveLabel*>()) {
      if (label->text() == QStringLiteral("no model")) QVERIFY(!label->isVisible());
    }
    ui::ChatWidget* chat = window.chat();
    markLoaded(chat);
    chatOnce(chat, QStringLiteral("hello"), 7, QStringLiteral("hi"));
    QCOMPARE(chat->turns().size(), size_t(2));
    QCOMPARE(window.currentConversation(), qint64(-1));
    window.newConversation();
    QVERIFY(chat->turns().empty());
  }

  void editAndResendReplacesLaterTurns() {
    QTemporaryDir dir;
    ui::MainWindow window(nullptr, dir.filePath(QStringLiteral("chats.sqlite")));
    ui::ChatWidget* chat = window.chat();
    markLoaded(chat);
    chatOnce(chat, QStringLiteral("one"), 1, QStringLiteral("r1"));
    chatOnce(chat, QStringLiteral("two"), 2, QStringLiteral("r2"));
    const qint64 id = window.currentConversation();
    QSignalSpy sent(chat, &ui::ChatWidget::sendRequested);
    chat->editMessage(2);
    QCOMPARE(chat->editingIndex(), 2);
    QCOMPARE(chat->input()->toPlainText(), QStringLiteral("two"));
    chat->sendPrompt(QStringLiteral("deux"));
    QCOMPARE(sent.count(), 1);
    const auto history = sent.at(0).at(0).value<ui::ChatHistory>();
    QCOMPARE(history.size(), size_t(3));  // one, r1, deux: the first two come from the prefix cache
    QCOMPARE(history[2].content, std::string("deux"));
    // Nothing changes until the engine takes the request.
    QCOMPARE(chat->turns().size(), size_t(4));
    QCOMPARE(window.chatStore()->messages(id).size(), size_t(4));
    chat->onRequestStarted(3, true);
    QCOMPARE(chat->editingIndex(), -1);
    chat->onTokens(3, 0, QStringLiteral("r2'"));
    ui::FinishInfo done;
    done.reason = FinishReason::Stop;
    done.stats.num_prompt_tokens = 30;
    done.stats.num_cached_prompt_tokens = 16;
    done.stats.num_generated_tokens = 3;
    chat->onFinished(3, done);
    const auto messages = window.chatStore()->messages(id);
    QCOMPARE(messages.size(), size_t(4));
    QCOMPARE(messages[2].content, QStringLiteral("deux"));
    QCOMPARE(messages[3].content, QStringLiteral("r2'"));
    // The prefix-cache hit is shown under the reply and saved with it.
    QVERIFY2(chat->renderedMarkdown().contains(QStringLiteral("16 of 30 prompt tokens from cache")),
             qPrintable(chat->renderedMarkdown()));
    QVERIFY(messages[3].stats_json.contains(QStringLiteral("cached_prompt_tokens")));
  }

  void streamingUpdatesOnlyTheReplyBeingWritten() {
    ui::MainWindow window;
    ui::ChatWidget* chat = window.chat();
    markLoaded(chat);
    chatOnce(chat, QStringLiteral("first question"), 1, QStringLiteral("first answer"));
    chat->sendPrompt(QStringLiteral("second question"));
    chat->onRequestStarted(2, true);
    auto* view = chat->findChild<QTextBrowser*>();
    QVERIFY(view);
    for (const char* piece : {"Paged ", "**attention** ", "keeps ", "blocks."}) {
      chat->onTokens(2, 0, QString::fromLatin1(piece));
      QTest::qWait(60);  // past the render interval
    }
    const QString shown = view->document()->toPlainText();
    QVERIFY2(shown.contains(QStringLiteral("Paged attention keeps blocks.")), qPrintable(shown));
    QCOMPARE(shown.count(QStringLiteral("first answer")), 1);
    QCOMPARE(shown.count(QStringLiteral("second question")), 1);
    QVERIFY(chat->renderedMarkdown().endsWith(QStringLiteral("Paged **attention** keeps blocks.")));
    ui::FinishInfo done;
    done.reason = FinishReason::Stop;
    chat->onFinished(2, done);
    QCOMPARE(view->document()->toPlainText().count(QStringLiteral("Paged attention keeps blocks.")), 1);
  }

  void regenerateReplacesTheLastReply() {
    QTemporaryDir dir;
    ui::MainWindow window(nullptr, dir.filePath(QStringLiteral("chats.sqlite")));
    ui::ChatWidget* chat = window.chat();
    markLoaded(chat);
    chatOnce(chat, QStringLiteral("q"), 1, QStringLiteral("first answer"));
    QSignalSpy sent(chat, &ui::ChatWidget::sendRequested);
    chat->regenerate();
    QCOMPARE(sent.count(), 1);
    QCOMPARE(sent.at(0).at(0).value<ui::ChatHistory>().size(), size_t(1));
    chat->onRequestStarted(2, true);
    chat->onTokens(2, 0, QStringLiteral("second answer"));
    ui::FinishInfo done;
    done.reason = FinishReason::Stop;
    chat->onFinished(2, done);
    QCOMPARE(chat->turns().size(), size_t(2));
    const auto messages = window.chatStore()->messages(window.currentConversation());
    QCOMPARE(messages.size(), size_t(2));
    QCOMPARE(messages[1].content, QStringLiteral("second answer"));
  }

  void aRequestThatCannotStartChangesNothing() {
    QTemporaryDir dir;
    ui::MainWindow window(nullptr, dir.filePath(QStringLiteral("chats.sqlite")));
    ui::ChatWidget* chat = window.chat();
    markLoaded(chat);
    chatOnce(chat, QStringLiteral("q"), 1, QStringLiteral("a"));
    const qint64 id = window.currentConversation();
    chat->sendPrompt(QStringLiteral("a prompt too long for the KV pool"));
    chat->onError(QStringLiteral("the prompt needs 900 blocks; the pool has 64"));
    QVERIFY(!chat->busy());
    QCOMPARE(chat->turns().size(), size_t(2));
    QCOMPARE(window.chatStore()->messages(id).size(), size_t(2));
    QCOMPARE(chat->input()->toPlainText(), QStringLiteral("a prompt too long for the KV pool"));
  }

  void alternativeRepliesAreKeptAndFlipped() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    qint64 id = -1;
    {
      ui::MainWindow window(nullptr, path);
      ui::ChatWidget* chat = window.chat();
      markLoaded(chat);
      ui::ConversationSettings settings = chat->conversationSettings();
      settings.n = 3;
      settings.system_prompt = QStringLiteral("Be brief.");
      chat->setConversationSettings(settings);
      QSignalSpy sent(chat, &ui::ChatWidget::sendRequested);
      chat->sendPrompt(QStringLiteral("name a colour"));
      QCOMPARE(sent.at(0).at(2).toInt(), 3);
      const auto history = sent.at(0).at(0).value<ui::ChatHistory>();
      QCOMPARE(history.front().role, std::string("system"));
      chat->onRequestStarted(5, true);
      const QStringList replies{QStringLiteral("red"), QStringLiteral("green"), QStringLiteral("blue")};
      for (int i = 0; i < 3; ++i) chat->onTokens(5, i, replies[i]);
      for (int i : {2, 0, 1}) {
        ui::FinishInfo done;
        done.index = i;
        done.reason = FinishReason::Stop;
        chat->onFinished(5, done);
        QCOMPARE(chat->busy(), i != 1);
      }
      QCOMPARE(chat->turns()[1].alternatives, replies);
      QCOMPARE(chat->turns()[1].content, QStringLiteral("red"));
      chat->selectAlternative(1, 2);
      QCOMPARE(chat->turns()[1].content, QStringLiteral("blue"));
      QVERIFY(chat->renderedMarkdown().contains(QStringLiteral("reply 3 of 3")));
      QVERIFY(chat->renderedMarkdown().contains(QStringLiteral("alt/1/1")));  // ‹ previous
      id = window.currentConversation();
      // Once the conversation went on from it, the reply chosen stays chosen:
      // the next prompt's history was built on it.
      ui::ChatTurns later = chat->turns();
      later.push_back({"user", QStringLiteral("and another"), {}, 0, QString()});
      later.push_back({"assistant", QStringLiteral("yellow"), {}, 0, QString()});
      chat->setTurns(later);
      chat->selectAlternative(1, 0);
      QCOMPARE(chat->turns()[1].content, QStringLiteral("blue"));
      QVERIFY(!chat->renderedMarkdown().contains(QStringLiteral("alt/1/")));
      QVERIFY(chat->renderedMarkdown().contains(QStringLiteral("reply 3 of 3 (the conversation went on from this one)")));
    }
    ui::MainWindow again(nullptr, path);
    again.openConversation(id);
    QCOMPARE(again.chat()->turns()[1].content, QStringLiteral("blue"));
    QCOMPARE(again.chat()->turns()[1].selected, 2);
    QCOMPARE(again.chat()->conversationSettings().n, 3);
    QCOMPARE(again.chat()->conversationSettings().system_prompt, QStringLiteral("Be brief."));
  }

  void exportsMarkdownAndJson() {
    QTemporaryDir dir;
    ui::MainWindow window(nullptr, dir.filePath(QStringLiteral("chats.sqlite")));
    ui::ChatWidget* chat = window.chat();
    markLoaded(chat);
    chatOnce(chat, QStringLiteral("What is paging?"), 1, QStringLiteral("```cpp\nint x;\n```"));
    const QString md = dir.filePath(QStringLiteral("c.md"));
    const QString json = dir.filePath(QStringLiteral("c.json"));
    QVERIFY(window.exportConversation(md));
    QVERIFY(window.exportConversation(json));
    QFile md_file(md);
    QVERIFY(md_file.open(QIODevice::ReadOnly));
    QVERIFY(QString::fromUtf8(md_file.readAll()).contains(QStringLiteral("What is paging?")));
    QFile json_file(json);
    QVERIFY(json_file.open(QIODevice::ReadOnly));
    QJsonParseError error;
    QJsonDocument::fromJson(json_file.readAll(), &error);
    QCOMPARE(error.error, QJsonParseError::NoError);
    // The reply's code block gets a copy link.
    QVERIFY(chat->renderedMarkdown().contains(QStringLiteral("kvscope:code/1/0")));
  }

  void cascadeLegendAndInvariancePanel() {
    ui::MainWindow window(nullptr, QString());
    auto* legend = window.findChild<QLabel*>(QStringLiteral("blockMapLegend"));
    QVERIFY(legend);
    QVERIFY2(legend->text().contains(QStringLiteral("read once by cascade attention")), qPrintable(legend->text()));
    QVERIFY2(legend->text().contains(QStringLiteral("freed by a context shift (for 2 s)")), qPrintable(legend->text()));
    // Tensor parallelism: the legend adds that a block holds every rank's
    // KV heads, and drops it again at tp = 1.
    window.onSnapshot(test::withRanks(test::makeSnapshot(2, 3, 1), test::smolRanks(2, 1 << 20)));
    QVERIFY2(legend->text().contains(QStringLiteral("one block table for all 2 ranks")), qPrintable(legend->text()));
    QVERIFY(legend->text().contains(QStringLiteral("read once by cascade attention")));
    window.onSnapshot(test::makeSnapshot(2, 3, 1));
    QVERIFY2(!legend->text().contains(QStringLiteral("ranks")), qPrintable(legend->text()));

    QVERIFY(window.showPanel(QStringLiteral("invariance")));
    ui::InvariancePanel* panel = window.invariancePanel();
    QVERIFY(!panel->canRun());  // no model yet
    EngineConfig config;
    config.model_path = "/models/tiny.gguf";
    config.block_size = 32;
    window.setPersistSettings(false);
    window.loadEngine(config);
    ModelInfo info;
    info.name = "tiny";
    window.onModelLoaded(info);  // the engine has the settings: they are side A
    markLoaded(window.chat());
    chatOnce(window.chat(), QStringLiteral("What is paging?"), 1, QStringLiteral("Blocks."));
    chatOnce(window.chat(), QStringLiteral("And cascade attention?"), 2, QStringLiteral("One read."));
    const auto job = panel->buildJob();
    QVERIFY2(job.ok(), job.ok() ? "" : job.error().c_str());
    // The conversation as the chat sent its last message: every turn up to
    // it (the reply after it left out), run through the chat template.
    QCOMPARE(job->prompts.size(), size_t{1});
    QVERIFY(job->prompts[0].is_chat());
    QCOMPARE(job->prompts[0].text, std::string("And cascade attention?"));
    std::vector<std::string> roles;
    for (const ChatMessage& m : job->prompts[0].messages) roles.push_back(m.role);
    QCOMPARE(roles.back(), std::string("user"));
    QCOMPARE(roles.size() >= 3, true);  // (a system message), the first exchange, the last question
    QCOMPARE(job->prompts[0].messages[roles.size() - 2].content, std::string("Blocks."));
    // A system prompt set after the message was sent is not what the chat
    // ran: the check keeps the one it was sent with.
    const ui::ChatHistory sent = job->prompts[0].messages;
    ui::ConversationSettings pirate = window.chat()->conversationSettings();
    pirate.system_prompt = QStringLiteral("You are a pirate.");
    window.chat()->setConversationSettings(pirate);
    const auto after = panel->buildJob();
    QVERIFY(after.ok());
    QCOMPARE(after->prompts[0].messages.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i) QCOMPARE(after->prompts[0].messages[i].content, sent[i].content);
    // The next message is sent with it, and then checked with it.
    chatOnce(window.chat(), QStringLiteral("Arr?"), 3, QStringLiteral("Arr."));
    const auto third = panel->buildJob();
    QVERIFY(third.ok());
    QCOMPARE(third->prompts[0].messages.front().content, std::string("You are a pirate."));
    QCOMPARE(job->a.config.model_path, config.model_path);
    QCOMPARE(job->a.config.block_size, 32);
    QCOMPARE(job->b.config.block_size, 32);  // B starts from A
  }

  void fitsALaptopScreen() {
    // 1366 x 768 minus a panel bar: every dock shown must still fit, with
    // the chat's status line as long as a load's (a backend's reason) or an
    // error's: it wraps instead of widening the chat column.
    ui::MainWindow window;
    window.chat()->setStatus(QStringLiteral("Smollm2 135M 8k Lc100K Mix1 Ep2 loaded · 728 KV blocks of 16 tokens · "
                                            "context 8,192 · CPU: this build has no CUDA backend (built with "
                                            "KVSCOPE_CUDA=OFF) · and a little more to be sure it is long"));
    for (const QString& panel : ui::MainWindow::panelNames()) {
      QVERIFY(window.showPanel(panel));
      const QSize min = window.minimumSizeHint();
      QVERIFY2(min.width() <= 1366 && min.height() <= 720,
               qPrintable(QStringLiteral("%1: minimum %2 x %3").arg(panel).arg(min.width()).arg(min.height())));
      QVERIFY2(window.chat()->minimumSizeHint().width() < 600,
               qPrintable(QStringLiteral("the chat column needs %1 px").arg(window.chat()->minimumSizeHint().width())));
    }
    QVERIFY(!window.showPanel(QStringLiteral("nonsense")));
  }


  void everyControlHasAnAccessibleName() {
    // What a screen reader announces: an accessible name, or a button's text.
    ui::MainWindow window;
    window.show();
    QStringList unnamed;
    for (QWidget* w : window.findChildren<QWidget*>()) {
      const bool control = qobject_cast<QAbstractButton*>(w) || qobject_cast<QLineEdit*>(w) ||
                           qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w) ||
                           qobject_cast<QPlainTextEdit*>(w) || qobject_cast<QAbstractItemView*>(w) ||
                           qobject_cast<QSlider*>(w) || qobject_cast<ui::BlockMapWidget*>(w);
      if (!control || qobject_cast<QAbstractItemView*>(w->parentWidget())) continue;
      // Qt's own parts of a control (a spin box's line edit, a clear button,
      // the menu bar and tool bar overflow buttons) are named by the control.
      if (w->objectName().startsWith(QLatin1String("qt_")) ||
          QLatin1String(w->metaObject()->className()) == QLatin1String("QLineEditIconButton"))
        continue;
      auto* button = qobject_cast<QAbstractButton*>(w);
      if (!w->accessibleName().isEmpty() || (button && !button->text().isEmpty())) continue;
      if (!w->isVisibleTo(&window) && !w->parentWidget()) continue;
      unnamed << QStringLiteral("%1 (%2)").arg(QString::fromLatin1(w->metaObject()->className()), w->objectName());
    }
    QVERIFY2(unnamed.isEmpty(), qPrintable(unnamed.join(QStringLiteral(", "))));
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
