// ChatWidget while a reply streams: the blocks later tokens cannot change
// are rendered once and kept (models/markdown_stream.h), the rest again on
// each render; what is shown matches the reply rendered whole, a fenced
// block with blank lines stays one block, and the finished reply is
// rendered whole. Offscreen.
//   ctest --test-dir build -R chat_stream_test
#include <QScrollBar>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTextList>
#include <QtTest>

#include "chat_widget.h"
#include "models/conversation_settings.h"

using namespace kvscope;
using kvscope::ui::ChatWidget;

namespace {

ModelInfo tinyInfo() {
  ModelInfo info;
  info.name = "tiny";
  info.context_length = 4096;
  return info;
}

// `markdown` rendered whole, as plain text with blocks joined as the stream's are.
QString renderedWhole(const QString& markdown) {
  QTextDocument document;
  document.setMarkdown(markdown, ui::kChatMarkdown);
  return document.toPlainText().replace(QLatin1Char('\n'), QChar(0x2029));
}

// The revision of the document block whose text is `text` (-1: none).
int revisionOf(const QTextDocument* document, const QString& text) {
  for (QTextBlock b = document->begin(); b.isValid(); b = b.next()) {
    if (b.text() == text) return b.revision();
  }
  return -1;
}

}  // namespace

class ChatStreamTest : public QObject {
  Q_OBJECT
 private slots:
  void finishedBlocksAreRenderedOnceAndTheShownTextIsTheWholeRendering() {
    ChatWidget chat;
    chat.resize(600, 400);
    chat.onModelLoaded(tinyInfo());
    chat.sendPrompt(QStringLiteral("Write"));
    chat.onRequestStarted(3, true);
    const QTextDocument* document = chat.findChild<QTextBrowser*>()->document();

    // Chunks as the worker would send them; after each, what is shown is the
    // reply so far rendered whole.
    const QStringList chunks = {QStringLiteral("First para"),
                                QStringLiteral("graph, *done*.\n\nSecond"),
                                QStringLiteral(" one.\n\n```py\nx = 1\n"),
                                QStringLiteral("\ny = 2\n"),  // a blank line inside the fence
                                QStringLiteral("```\n\n## Heading\n\nLast"),
                                QStringLiteral(" words.")};
    QString reply;
    int first_revision = -1;
    for (const QString& chunk : chunks) {
      reply += chunk;
      chat.onTokens(3, 0, chunk);
      QTRY_COMPARE(chat.streamText(), renderedWhole(reply));
      if (first_revision < 0 && reply.contains(QStringLiteral("Second"))) {
        first_revision = revisionOf(document, QStringLiteral("First paragraph, done."));
        QVERIFY(first_revision >= 0);
      }
    }
    // The first paragraph was rendered when "Second" began and never again.
    QCOMPARE(revisionOf(document, QStringLiteral("First paragraph, done.")), first_revision);
    // The fenced block is one block with its blank line, as rendered whole.
    QVERIFY(chat.streamText().contains(QStringLiteral("x = 1\u2029\u2029y = 2")));
    // Each part keeps its own block formats: the heading that starts one is a
    // heading, the code that starts another is code.
    int checked = 0;
    for (QTextBlock b = document->begin(); b.isValid(); b = b.next()) {
      if (b.text() == QStringLiteral("Heading")) {
        QCOMPARE(b.blockFormat().headingLevel(), 2);
        ++checked;
      } else if (b.text() == QStringLiteral("x = 1")) {
        QVERIFY(b.blockFormat().hasProperty(QTextFormat::BlockCodeFence));
        ++checked;
      } else if (b.text() == QStringLiteral("Last words.")) {
        QCOMPARE(b.blockFormat().headingLevel(), 0);
        QVERIFY(!b.blockFormat().hasProperty(QTextFormat::BlockCodeFence));
        ++checked;
      }
    }
    QCOMPARE(checked, 3);

    ui::FinishInfo done;
    done.reason = FinishReason::Length;
    chat.onFinished(3, done);
    QTRY_VERIFY(!chat.busy());
    // Rendered whole again as a finished turn (with its copy link after the code).
    QVERIFY(chat.streamText().isEmpty());
    const QString shown = document->toPlainText();
    QVERIFY(shown.contains(QStringLiteral("First paragraph, done.\nSecond one.\nx = 1\n\ny = 2")));
    QVERIFY(shown.contains(QStringLiteral("Heading\nLast words.")));
  }

  // A numbered list streamed token by token is one list numbered from 1, as
  // rendered whole, with no blank line before it: the tail re-rendered after
  // "1. Dog" once kept the first item in a list of its own ("1. Dog",
  // "1. Fish", "2. Bird"), and a tail opening with a list was set after an
  // empty block.
  void aListStreamedTokenByTokenIsOneListAsRenderedWhole() {
    ChatWidget chat;
    chat.resize(600, 400);
    chat.onModelLoaded(tinyInfo());
    chat.sendPrompt(QStringLiteral("List"));
    chat.onRequestStarted(4, true);
    const QTextDocument* document = chat.findChild<QTextBrowser*>()->document();
    const QString reply = QStringLiteral("Animals:\n\n1. Dog (4)\n2. Fish (6)\n3. Bird (8)\n\n- a\n- b\n\nEnd.");
    for (int i = 0; i < reply.size(); i += 2) {
      chat.onTokens(4, 0, reply.mid(i, 2));
      QTRY_COMPARE(chat.streamText(), renderedWhole(reply.left(i + 2)));
    }
    QStringList items;
    QTextList* numbered = nullptr;
    for (QTextBlock b = document->begin(); b.isValid(); b = b.next()) {
      QTextList* list = b.textList();
      if (list == nullptr || list->format().style() != QTextListFormat::ListDecimal) continue;
      if (numbered == nullptr) numbered = list;
      QCOMPARE(list, numbered);
      items << QStringLiteral("%1 %2").arg(list->itemNumber(b) + 1).arg(b.text());
    }
    QCOMPARE(items, (QStringList{"1 Dog (4)", "2 Fish (6)", "3 Bird (8)"}));
  }

  // Raw HTML in a reply or a prompt is shown as text, not rendered: a reply
  // of "<b>100%</b>" lines once showed as one bold paragraph.
  void htmlInTheConversationIsShownAsText() {
    ChatWidget chat;
    chat.resize(600, 400);
    chat.onModelLoaded(tinyInfo());
    chat.sendPrompt(QStringLiteral("Say <i>hi</i>"));
    chat.onRequestStarted(7, true);
    const QString reply = QStringLiteral("<b>100%</b>\n<img src=\"x.png\">");
    chat.onTokens(7, 0, reply);
    QTRY_VERIFY(chat.streamText().contains(QStringLiteral("<b>100%</b>")));
    QVERIFY(chat.streamText().contains(QStringLiteral("<img src=\"x.png\">")));
    ui::FinishInfo done;
    done.reason = FinishReason::Stop;
    chat.onFinished(7, done);
    QTRY_VERIFY(!chat.busy());
    const QString shown = chat.findChild<QTextBrowser*>()->document()->toPlainText();
    QVERIFY(shown.contains(QStringLiteral("Say <i>hi</i>")));
    QVERIFY(shown.contains(QStringLiteral("<b>100%</b>")));
  }

  // The view follows the reply at the bottom however tall the conversation
  // (the document lays itself out in steps after a render, so the bottom
  // read off the bar at render time was stale and the reply streamed out of
  // sight); a reader who scrolled up stays where they are while tokens come
  // and when the reply ends (a finished reply once put them at the top).
  void theViewFollowsTheReplyUnlessTheReaderScrolledAway() {
    ChatWidget chat;
    chat.resize(600, 400);
    chat.onModelLoaded(tinyInfo());
    chat.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chat));
    QScrollBar* bar = chat.findChild<QTextBrowser*>()->verticalScrollBar();
    ui::ChatTurns turns;
    for (int i = 0; i < 40; ++i) {
      turns.push_back({"user", QStringLiteral("Question %1: tell me more.").arg(i), {}, 0, {}});
      turns.push_back({"assistant", QStringLiteral("Answer %1.\n\n").arg(i).repeated(6), {}, 0, {}});
    }
    turns.push_back({"user", QStringLiteral("word ").repeated(3000), {}, 0, {}});
    turns.push_back({"assistant", QStringLiteral("ok"), {}, 0, {}});
    chat.setTurns(turns);
    QTRY_VERIFY(bar->maximum() > 2000);
    QTRY_COMPARE(bar->value(), bar->maximum());  // an opened conversation shows its latest turns

    chat.sendPrompt(QStringLiteral("And now?"));
    chat.onRequestStarted(5, true);
    for (int i = 0; i < 30; ++i) {
      chat.onTokens(5, 0, QStringLiteral("Line %1 of the reply.\n\n").arg(i));
      QTRY_COMPARE(chat.streamText().count(QStringLiteral("of the reply")), i + 1);
      QTRY_COMPARE(bar->value(), bar->maximum());
    }

    bar->setValue(bar->maximum() / 2);  // the reader scrolls up
    const int place = bar->value();
    for (int i = 0; i < 10; ++i) {
      chat.onTokens(5, 0, QStringLiteral("More %1.\n\n").arg(i));
      QTRY_VERIFY(chat.streamText().contains(QStringLiteral("More %1.").arg(i)));
      QCOMPARE(bar->value(), place);
    }
    ui::FinishInfo done;
    done.reason = FinishReason::Length;
    chat.onFinished(5, done);
    QTRY_VERIFY(!chat.busy());
    QTest::qWait(50);
    QCOMPARE(bar->value(), place);

    bar->setValue(bar->maximum());  // back at the bottom: following again
    chat.sendPrompt(QStringLiteral("Once more?"));
    chat.onRequestStarted(6, true);
    for (int i = 0; i < 10; ++i) {
      chat.onTokens(6, 0, QStringLiteral("Again %1.\n\n").arg(i));
      QTRY_VERIFY(chat.streamText().contains(QStringLiteral("Again %1.").arg(i)));
      QTRY_COMPARE(bar->value(), bar->maximum());
    }
  }

  // Parallel replies: when the shown one ends before the others, the status
  // line says so (it kept its last "generating" figures while they ran on).
  void theShownReplyEndingBeforeTheOthersIsSaid() {
    ChatWidget chat;
    chat.onModelLoaded(tinyInfo());
    ui::ConversationSettings settings;
    settings.n = 3;
    chat.setConversationSettings(settings);
    chat.sendPrompt(QStringLiteral("Three ways"));
    chat.onRequestStarted(7, true);
    for (int i = 0; i < 3; ++i) chat.onTokens(7, i, QStringLiteral("Reply %1").arg(i));
    ui::FinishInfo done;
    done.index = 0;
    done.reason = FinishReason::Stop;
    chat.onFinished(7, done);
    auto snapshot = std::make_shared<EngineSnapshot>();
    for (int i = 1; i < 3; ++i) {
      SequenceSnapshot seq;
      seq.id = 7;
      seq.index = i;
      seq.num_prompt_tokens = 4;
      seq.tokens.assign(9, 5);
      snapshot->sequences.push_back(seq);
    }
    chat.onSnapshot(snapshot);
    QCOMPARE(chat.statusText(), QStringLiteral("reply 1 is done · 2 other replies are still generating"));
    done.index = 1;
    chat.onFinished(7, done);
    chat.onSnapshot(snapshot);
    QCOMPARE(chat.statusText(), QStringLiteral("reply 1 is done · 1 other reply is still generating"));
  }
};

QTEST_MAIN(ChatStreamTest)
#include "chat_stream_test.moc"
