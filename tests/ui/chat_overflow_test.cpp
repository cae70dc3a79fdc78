// The chat says when context overflow drops tokens (docs/context-overflow.md):
// while a reply is still being written, the status line says so from the
// snapshot after the first shift on; the finished reply's stats line (saved
// with the message) says how many were dropped; nothing is said when none
// were. ChatWidget alone, fed as the app feeds it. Offscreen.
//   ctest --test-dir build -R chat_overflow_test
#include <memory>

#include <QtTest>

#include "chat_widget.h"
#include "kvscope/engine_snapshot.h"
#include "models/message_stats.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr quint64 kRequest = 5;

ModelInfo tinyInfo() {
  ModelInfo info;
  info.name = "tiny";
  info.context_length = 8192;  // trained; the engine's cap below is what a reply may fill
  info.max_model_len = 64;
  info.block_size = 4;
  info.num_kv_blocks = 32;
  return info;
}

// The reply's sequence mid-generation: `kept` tokens in the context after
// `dropped` left it (10 of them the prompt).
SnapshotPtr generating(int kept, int dropped, int shifts) {
  auto s = std::make_shared<EngineSnapshot>();
  SequenceSnapshot seq;
  seq.id = kRequest;
  seq.state = SequenceState::Running;
  seq.num_prompt_tokens = 10;
  seq.num_computed_tokens = kept - 1;
  seq.num_context_shifts = shifts;
  seq.num_dropped_tokens = dropped;
  seq.tokens.assign(static_cast<size_t>(kept), 1);
  s->sequences.push_back(seq);
  return s;
}

}  // namespace

class ChatOverflowTest : public QObject {
  Q_OBJECT
 private slots:
  void theChatSaysWhatOverflowDropped() {
    ChatWidget chat;
    chat.onModelLoaded(tinyInfo());
    // The context in force beside the model's own.
    QVERIFY2(chat.statusText().contains(QStringLiteral("context 64 (the model's: %1)").arg(QLocale().toString(8192))),
             qPrintable(chat.statusText()));
    chat.sendPrompt(QStringLiteral("Tell me a long story"));
    chat.onRequestStarted(kRequest, true);
    chat.onTokens(kRequest, 0, QStringLiteral("Once"));

    chat.onSnapshot(generating(40, 0, 0));
    QVERIFY2(chat.statusText().startsWith(QStringLiteral("generating · 30 tokens")), qPrintable(chat.statusText()));
    QVERIFY2(!chat.statusText().contains(QStringLiteral("dropped")), qPrintable(chat.statusText()));

    // The first shift: 32 tokens left the middle; 62 were generated so far.
    chat.onSnapshot(generating(40, 32, 1));
    QVERIFY2(chat.statusText().startsWith(QStringLiteral("generating · 62 tokens")), qPrintable(chat.statusText()));
    QVERIFY2(chat.statusText().contains(QStringLiteral("context full: 32 token(s) dropped from the middle")),
             qPrintable(chat.statusText()));
    // The context shown is the one in force: what the sequence holds, of max_model_len.
    QVERIFY2(chat.statusText().contains(QStringLiteral("context 40 / 64")), qPrintable(chat.statusText()));

    FinishInfo info;
    info.reason = FinishReason::Length;
    info.stats.num_prompt_tokens = 10;
    info.stats.num_generated_tokens = 90;
    info.stats.num_context_shifts = 2;
    info.stats.num_dropped_tokens = 64;
    info.stats.num_context_tokens = 36;
    chat.onFinished(kRequest, info);
    QVERIFY(!chat.busy());
    QVERIFY2(chat.statusText().contains(QStringLiteral("context 36 / 64")), qPrintable(chat.statusText()));
    QVERIFY2(chat.statusText().contains(QStringLiteral("64 token(s) dropped from the middle")),
             qPrintable(chat.statusText()));
    QVERIFY2(chat.renderedMarkdown().contains(QStringLiteral("64 token(s) dropped from the middle")),
             qPrintable(chat.renderedMarkdown()));
    // Saved with the message, so a reopened conversation still says it.
    const std::vector<MessageStats> saved = messageStatsFromJson(chat.turns().back().stats_json);
    QCOMPARE(saved.size(), size_t(1));
    QCOMPARE(saved[0].dropped_tokens, 64);
    QCOMPARE(saved[0].context_shifts, 2);
  }

  void aReplyThatFitsSaysNothingAboutDropping() {
    ChatWidget chat;
    chat.onModelLoaded(tinyInfo());
    chat.sendPrompt(QStringLiteral("Hi"));
    chat.onRequestStarted(kRequest, true);
    chat.onTokens(kRequest, 0, QStringLiteral("Hello"));
    FinishInfo info;
    info.reason = FinishReason::Stop;
    info.stats.num_prompt_tokens = 3;
    info.stats.num_generated_tokens = 2;
    chat.onFinished(kRequest, info);
    QVERIFY2(!chat.renderedMarkdown().contains(QStringLiteral("dropped")), qPrintable(chat.renderedMarkdown()));
    QVERIFY(!messageStatsToJson(messageStatsFromJson(chat.turns().back().stats_json)).contains(QStringLiteral("dropped")));
  }
};

QTEST_MAIN(ChatOverflowTest)
#include "chat_overflow_test.moc"
