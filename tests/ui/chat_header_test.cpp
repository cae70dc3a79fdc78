// The chat's conversation header names the sampling values in force and where
// each came from (this conversation, the model file, kvscope's defaults), and
// a reply is sent with exactly those values. No engine: ModelInfo is given by
// hand as the worker would deliver it. Offscreen.
//   ctest --test-dir build -R chat_header_test
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QtTest>

#include "chat_widget.h"
#include "engine_types.h"
#include "models/message_stats.h"

using kvscope::ui::ChatWidget;
using kvscope::ui::ConversationSettings;

class ChatHeaderTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { kvscope::ui::registerEngineMetaTypes(); }

  // Opening another conversation: the status line describes its last reply
  // (or says it is new), not whatever the chat shown before left there.
  void statusFollowsTheConversationShown() {
    ChatWidget chat;
    kvscope::ModelInfo info;
    info.name = "tiny";
    info.context_length = 512;
    chat.onModelLoaded(info);
    chat.newChat();
    QCOMPARE(chat.statusText(), QStringLiteral("New chat"));

    kvscope::ui::MessageStats stats;
    stats.generated_tokens = 7;
    stats.prompt_tokens = 12;
    kvscope::ui::ChatTurns turns = {{"user", QStringLiteral("Hi"), {}, 0, QString()},
                                    {"assistant", QStringLiteral("Hello there"), {}, 0,
                                     kvscope::ui::messageStatsToJson({stats})}};
    chat.setTurns(turns);
    QVERIFY2(chat.statusText().startsWith(QStringLiteral("7 tokens")), qPrintable(chat.statusText()));
    chat.setTurns({});
    QCOMPARE(chat.statusText(), QStringLiteral("New chat"));
  }

  // Settings applied to the loaded model replace an error that no longer
  // stands (a prompt the old, smaller pool could not fit stayed under the
  // input after the pool was made larger again); a reply being written
  // keeps its progress line.
  void appliedSettingsReplaceAStaleError() {
    ChatWidget chat;
    kvscope::ModelInfo info;
    info.name = "tiny";
    info.context_length = 512;
    info.num_kv_blocks = 1;
    info.block_size = 16;
    chat.onModelLoaded(info);
    chat.sendPrompt(QStringLiteral("A long prompt"));
    chat.onError(QStringLiteral("the prompt has 861 tokens; the context holds 16"));
    QVERIFY(chat.statusText().startsWith(QStringLiteral("error:")));
    info.num_kv_blocks = 32;
    chat.onReconfigured(info);
    QVERIFY2(chat.statusText().startsWith(QStringLiteral("Settings applied · 32 KV blocks of 16 tokens")),
             qPrintable(chat.statusText()));

    chat.sendPrompt(QStringLiteral("Hi"));
    chat.onRequestStarted(9, true);
    chat.onTokens(9, 0, QStringLiteral("Hel"));
    const QString writing = chat.statusText();
    chat.onReconfigured(info);
    QCOMPARE(chat.statusText(), writing);
  }

  // Tab in the message box moves on (to Send), as in any form, instead of
  // typing a tab character: keyboard users could not reach Send.
  void tabLeavesTheMessageBox() {
    ChatWidget chat;
    chat.show();
    chat.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&chat));
    auto* input = chat.findChild<QPlainTextEdit*>();
    QVERIFY(input);
    input->setFocus();
    QVERIFY(input->hasFocus());
    QTest::keyClicks(input, QStringLiteral("Hi"));
    QTest::keyClick(input, Qt::Key_Tab);
    QCOMPARE(input->toPlainText(), QStringLiteral("Hi"));
    QVERIFY(!input->hasFocus());
  }

  void headerNamesTheSourceOfEachSamplingValue() {
    ChatWidget chat;
    chat.setConversationSettings(ConversationSettings());
    // Before a model: kvscope's defaults only.
    QVERIFY2(chat.headerText().contains(QStringLiteral("kvscope defaults: temperature 0.8, top-k 40, top-p 0.95, "
                                                       "min-p 0.05, repeat penalty 1.1, over the last 64 tokens")),
             qPrintable(chat.headerText()));
    QVERIFY(!chat.headerText().contains(QStringLiteral("model file")));

    kvscope::ModelInfo info;
    info.name = "tiny";
    info.context_length = 512;
    info.recommended_sampling.temperature = 0.6f;
    info.recommended_sampling.top_p = 0.9f;
    info.recommended_sampling.source = "GGUF general.sampling.*";
    chat.onModelLoaded(info);
    const QString header = chat.headerText();
    QVERIFY2(header.contains(QStringLiteral("model file: temperature 0.6, top-p 0.9")), qPrintable(header));
    QVERIFY2(header.contains(QStringLiteral("kvscope defaults: top-k 40, min-p 0.05, repeat penalty 1.1")),
             qPrintable(header));
    QVERIFY(chat.conversationSettings().chosenFields().isEmpty());

    // The user's own value is named as the conversation's and is what is sent.
    ConversationSettings mine = chat.conversationSettings();
    mine.sampling.temperature = 1.2f;
    chat.setConversationSettings(mine);
    QVERIFY2(chat.headerText().contains(QStringLiteral("this conversation: temperature 1.2")),
             qPrintable(chat.headerText()));
    QVERIFY2(chat.headerText().contains(QStringLiteral("model file: top-p 0.9")), qPrintable(chat.headerText()));
    QSignalSpy sent(&chat, &ChatWidget::sendRequested);
    chat.sendPrompt(QStringLiteral("Write a limerick about memory blocks."));
    QCOMPARE(sent.count(), 1);
    const auto sampling = sent.first().at(1).value<kvscope::SamplingParams>();
    QCOMPARE(sampling.temperature, 1.2f);
    QCOMPARE(sampling.top_p, 0.9f);
    QCOMPARE(sampling.repetition_penalty, 1.1f);
    QCOMPARE(sampling.repeat_last_n, 64);

    // Penalties no model file recommends, and a fixed seed, are named when on.
    QVERIFY(!chat.headerText().contains(QStringLiteral("frequency penalty")));
    mine.sampling.frequency_penalty = 2.0f;
    mine.sampling.presence_penalty = 0.5f;
    mine.sampling.seed = 42;
    chat.setConversationSettings(mine);
    QVERIFY2(chat.headerText().contains(QStringLiteral("presence penalty 0.5, frequency penalty 2, seed 42")),
             qPrintable(chat.headerText()));
  }
};

QTEST_MAIN(ChatHeaderTest)
#include "chat_header_test.moc"
