// The chat's text helpers: fenced code blocks found (CommonMark fence rules,
// unclosed blocks skipped) and copy links placed after them; the stable
// prefix of a reply still being written; per-message stats to JSON and back,
// and their one-line summary.
//   ctest --test-dir build -R chat_text_test
#include <QtTest>

#include "models/markdown_code_blocks.h"
#include "models/markdown_stream.h"
#include "models/message_stats.h"
#include "models/user_message_markdown.h"

using namespace kvscope;
using namespace kvscope::ui;

class ChatTextTest : public QObject {
  Q_OBJECT
 private slots:
  void findsClosedFencedBlocks() {
    const QString md = QStringLiteral(
        "Intro\n```cpp\nint x = 1;\n\nreturn x;\n```\ntext\n~~~~\n```not a close\n~~~~\n  ```\nopen at the end");
    const std::vector<CodeBlock> blocks = fencedCodeBlocks(md);
    QCOMPARE(blocks.size(), size_t(2));
    QCOMPARE(blocks[0].info, QStringLiteral("cpp"));
    QCOMPARE(blocks[0].code, QStringLiteral("int x = 1;\n\nreturn x;"));
    QCOMPARE(blocks[0].end_line, 5);
    // A backtick line cannot close a tilde fence.
    QCOMPARE(blocks[1].code, QStringLiteral("```not a close"));
    QCOMPARE(blocks[1].end_line, 9);
  }

  void closingFenceRules() {
    // Shorter fences and fences with text after them do not close a block.
    QCOMPARE(fencedCodeBlocks(QStringLiteral("````\na\n```\n```` x\n````")).size(), size_t(1));
    QCOMPARE(fencedCodeBlocks(QStringLiteral("````\na\n```\n```` x\n````"))[0].code, QStringLiteral("a\n```\n```` x"));
    // Four spaces of indent is not a fence; backticks in a backtick info string neither.
    QVERIFY(fencedCodeBlocks(QStringLiteral("    ```\na\n```")).empty());
    QVERIFY(fencedCodeBlocks(QStringLiteral("``` a`b\nx\n```")).empty());
    QVERIFY(fencedCodeBlocks(QStringLiteral("``\nx\n``")).empty());
    QVERIFY(fencedCodeBlocks(QString()).empty());
  }

  // A reply cut inside a code block gets its fence closed, so what the chat
  // puts after it (the stats line) stays out of the block.
  void anOpenFenceAtTheEndIsClosed() {
    QCOMPARE(withOpenFenceClosed(QStringLiteral("Here:\n````py\nx = 1")), QStringLiteral("Here:\n````py\nx = 1\n````"));
    QCOMPARE(withOpenFenceClosed(QStringLiteral("~~~\n")), QStringLiteral("~~~\n\n~~~"));
    const QString closed = QStringLiteral("```\nx\n```\ndone");
    QCOMPARE(withOpenFenceClosed(closed), closed);
    QCOMPARE(withOpenFenceClosed(QStringLiteral("plain")), QStringLiteral("plain"));
    // The closed block then gets its copy link, as any closed block.
    QCOMPARE(fencedCodeBlocks(withOpenFenceClosed(QStringLiteral("```\ncode"))).size(), size_t(1));
  }

  void linksGoAfterEachClosedBlock() {
    const QString md = QStringLiteral("a\n```\nx\n```\nb\n```\ny\n```\n```\nstreaming");
    const QString out = withLinksAfterCodeBlocks(md, [](int k) { return QStringLiteral("[copy %1]").arg(k); });
    QCOMPARE(out, QStringLiteral("a\n```\nx\n```\n\n[copy 0]\n\nb\n```\ny\n```\n\n[copy 1]\n\n```\nstreaming"));
    QCOMPARE(withLinksAfterCodeBlocks(QStringLiteral("plain"), [](int) { return QStringLiteral("x"); }),
             QStringLiteral("plain"));
  }

  // A reply's stable prefix ends after its last blank line outside a fenced
  // block, and grows as the reply does.
  void stablePrefixEndsAfterTheLastBlankLineOutsideAFence() {
    StableMarkdownPrefix prefix;
    QCOMPARE(prefix.advance(QString()), 0);
    QCOMPARE(prefix.advance(QStringLiteral("First para")), 0);
    QCOMPARE(prefix.advance(QStringLiteral("First para\n")), 0);  // not blank yet
    const QString two = QStringLiteral("First para\n\nSecond");
    QCOMPARE(prefix.advance(two), 12);  // just after the blank line: "Second" starts a block
    QCOMPARE(two.left(12), QStringLiteral("First para\n\n"));
    // A fence opened after it: blank lines inside do not count, until it closes.
    const QString fenced = two + QStringLiteral("\n\n```py\nx = 1\n\ny = 2\n");
    QCOMPARE(prefix.advance(fenced), 20);  // after "Second\n\n"
    const QString closed = fenced + QStringLiteral("```\n\nAfter");
    QCOMPARE(prefix.advance(closed), static_cast<int>(closed.size()) - 5);
    // A tilde fence is not closed by backticks.
    StableMarkdownPrefix tilde;
    QCOMPARE(tilde.advance(QStringLiteral("~~~\na\n```\n\nb\n\n")), 0);
    // Blank lines of spaces count; a leading blank line does not make a prefix.
    StableMarkdownPrefix spaces;
    QCOMPARE(spaces.advance(QStringLiteral("\nA\n   \nB")), 7);
    // One call on the whole text finds what the calls token by token found.
    StableMarkdownPrefix whole, by_token;
    int last = 0;
    for (int n = 0; n <= closed.size(); ++n) last = by_token.advance(closed.left(n));
    QCOMPARE(last, whole.advance(closed));
    // A text that is not the previous one grown starts again.
    QCOMPARE(prefix.advance(QStringLiteral("x")), 0);
  }

  void statsRoundTrip() {
    FinishInfo info;
    info.reason = FinishReason::Length;
    info.stats.num_prompt_tokens = 120;
    info.stats.num_cached_prompt_tokens = 96;
    info.stats.num_generated_tokens = 42;
    info.stats.num_preemptions = 1;
    info.stats.time_to_first_token_s = 0.125;
    info.stats.total_time_s = 0.5;
    info.stats.decode_tokens_per_s = 230.5;
    info.stats.seed = 0xfedcba9876543210ull;  // does not fit a double: stored as text
    info.stats.num_context_shifts = 3;
    info.stats.num_dropped_tokens = 512;
    const MessageStats a = MessageStats::fromFinish(info);
    QCOMPARE(a.finish, QStringLiteral("length"));
    QCOMPARE(a.dropped_tokens, 512);
    QCOMPARE(a.context_shifts, 3);
    MessageStats b;
    b.finish = QStringLiteral("stop");
    b.generated_tokens = 3;
    const std::vector<MessageStats> back = messageStatsFromJson(messageStatsToJson({a, b}));
    QCOMPARE(back.size(), size_t(2));
    QVERIFY(back[0] == a);
    QVERIFY(back[1] == b);
    QCOMPARE(back[0].seed, quint64{0xfedcba9876543210ull});
  }

  void unreadableStatsGiveNone() {
    QVERIFY(messageStatsFromJson(QString()).empty());
    QVERIFY(messageStatsFromJson(QStringLiteral("not json")).empty());
    QVERIFY(messageStatsFromJson(QStringLiteral("[1,2]")).empty());
    QCOMPARE(messageStatsFromJson(QStringLiteral("{\"alternatives\":[{\"generated_tokens\":\"x\"}]}")).size(), size_t(1));
  }

  void statsLineSaysWhatHappened() {
    MessageStats m;
    m.finish = QStringLiteral("stop");
    m.generated_tokens = 42;
    m.time_to_first_token_s = 0.125;
    m.tokens_per_s = 230.54;
    m.prompt_tokens = 120;
    m.cached_prompt_tokens = 96;
    m.preemptions = 2;
    const QString line = messageStatsLine(m);
    QVERIFY2(line.contains(QStringLiteral("42 tokens")), qPrintable(line));
    QVERIFY2(line.contains(QStringLiteral("first token 0.13 s")) || line.contains(QStringLiteral("first token 0.12 s")),
             qPrintable(line));
    QVERIFY2(line.contains(QStringLiteral("230.5 tok/s")), qPrintable(line));
    QVERIFY2(line.contains(QStringLiteral("96 of 120 prompt tokens from cache")), qPrintable(line));
    QVERIFY2(line.contains(QStringLiteral("preempted 2")), qPrintable(line));
    QVERIFY(line.endsWith(QStringLiteral("stop")));
    m.cached_prompt_tokens = 0;
    QVERIFY(messageStatsLine(m).contains(QStringLiteral("120 prompt tokens")));
  }

  // A user's line breaks are kept: hard breaks between a paragraph's lines,
  // none inside a fence or around blank lines.
  void userMessagesKeepTheirLineBreaks() {
    QCOMPARE(userMessageMarkdown(QStringLiteral("one\ntwo\r\nthree\n\nfour\\\nfive  \nsix")),
             QStringLiteral("one  \ntwo  \nthree\n\nfour\\\nfive  \nsix"));
    QCOMPARE(userMessageMarkdown(QStringLiteral("look:\n```\na\nb\n```\nafter\nend")),
             QStringLiteral("look:  \n```\na\nb\n```\nafter  \nend"));
    // Indented lines may be code: no trailing spaces to be copied with it.
    QCOMPARE(userMessageMarkdown(QStringLiteral("code:\n    int x;\n    int y;\n\tz")),
             QStringLiteral("code:  \n    int x;\n    int y;\n\tz"));
    // Rendered, the lines stay apart (Markdown alone joins them with a space).
    QTextDocument doc;
    doc.setMarkdown(userMessageMarkdown(QStringLiteral("first line\nsecond line")), kChatMarkdown);
    QVERIFY2(!doc.toPlainText().contains(QStringLiteral("first line second line")), qPrintable(doc.toPlainText()));
    QVERIFY(doc.toPlainText().contains(QStringLiteral("second line")));
  }

  // A paste past kVerbatimMessageChars is shown as typed, in a fence that no
  // line of it can close, so Markdown in it (a list, a fence) stays text.
  void aLongPasteIsShownAsTyped() {
    QString text = QStringLiteral("- item\n````\nnot code\n");
    while (text.size() <= kVerbatimMessageChars) text += QStringLiteral("- another line of the paste\n");
    const QString md = userMessageMarkdown(text);
    QVERIFY(md.startsWith(QStringLiteral("`````\n")));
    QVERIFY(md.endsWith(QStringLiteral("\n`````")));
    QTextDocument doc;
    doc.setMarkdown(md, kChatMarkdown);
    QVERIFY2(doc.toPlainText().startsWith(QStringLiteral("- item\n````\nnot code")), qPrintable(doc.toPlainText().left(80)));
    QVERIFY(userMessageMarkdown(QStringLiteral("short\n- list")).startsWith(QStringLiteral("short  ")));
  }
};

QTEST_GUILESS_MAIN(ChatTextTest)
#include "chat_text_test.moc"
