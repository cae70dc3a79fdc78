// Token ids as tooltip text (models/token_text.h) on hand-made snapshots and
// token tables: which tokens a block holds, UTF-8 split across blocks,
// control characters made visible, eliding, HTML escaping.
//   ctest --test-dir build -R token_text_test --output-on-failure
#include <QtTest>

#include <memory>
#include <string>
#include <vector>

#include "models/token_text.h"
#include "test_snapshots.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

// A byte vocabulary as the tiny test model has: ids 0..255 are the bytes,
// 256 is <|im_start|>.
constexpr int32_t kImStart = 256;

std::vector<std::string> byteTable() {
  std::vector<std::string> table;
  for (int b = 0; b < 256; ++b) table.emplace_back(1, static_cast<char>(b));
  table.emplace_back("<|im_start|>");
  return table;
}

std::vector<int32_t> idsOf(const std::string& text) {
  std::vector<int32_t> ids;
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

}  // namespace

class TokenTextTest : public QObject {
  Q_OBJECT
 private slots:
  void blockHoldsItsSlotsOfTheSequence() {
    // Sequences 100, 101, 102 (3 blocks of 16, the last half full) share block 0.
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 1));
    std::vector<int32_t>& tokens = s->sequences[1].tokens;  // 101: blocks 0, 3, 4
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i);

    BlockTokens held = blockTokens(*s, 3);
    QVERIFY(held.sequence);
    QCOMPARE(held.sequence->id, RequestId{101});
    QCOMPARE(held.position, 1);
    QCOMPARE(held.first_token, 16);
    QCOMPARE(held.ids.size(), size_t{16});
    QCOMPARE(held.ids.front(), 16);
    QCOMPARE(held.ids.back(), 31);

    held = blockTokens(*s, 4);  // half full: 8 of 16 slots
    QCOMPARE(held.first_token, 32);
    QCOMPARE(held.ids.size(), size_t{8});
    QCOMPARE(held.ids.back(), 39);

    held = blockTokens(*s, 0);  // shared: the first owner's tokens
    QCOMPARE(held.sequence->id, RequestId{100});
    QCOMPARE(held.ids.size(), size_t{16});

    // Free and cached-free blocks belong to no sequence; ids out of range too.
    QVERIFY(!blockTokens(*s, 20).sequence);
    QVERIFY(!blockTokens(*s, static_cast<int>(s->blocks.size()) - 1).sequence);
    QVERIFY(!blockTokens(*s, -1).sequence);
    QVERIFY(!blockTokens(*s, 1000).sequence);

    // A swapped sequence's table holds swap-space ids, not pool blocks.
    s->sequences[1].state = SequenceState::Swapped;
    QVERIFY(!blockTokens(*s, 3).sequence);

    // A slot count beyond the tokens the sequence has is clipped.
    s->sequences[1].state = SequenceState::Running;
    s->sequences[1].tokens.resize(20);
    QCOMPARE(blockTokens(*s, 3).ids.size(), size_t{4});
    QVERIFY(blockTokens(*s, 4).ids.empty());
  }

  void textIsDecodedAcrossTokens() {
    const std::vector<std::string> table = byteTable();
    const std::string text = "naïve 日本 🙂";  // 2-, 3- and 4-byte characters, one byte per token
    const std::vector<int32_t> ids = idsOf(text);
    QCOMPARE(tokenText(table, ids), QString::fromUtf8(text.c_str()));
    // A block boundary inside "ï" (bytes 2 and 3): each side shows one
    // U+FFFD for its part, the rest is intact.
    const std::span<const int32_t> all(ids);
    QCOMPARE(tokenText(table, all.subspan(0, 3)), QStringLiteral("na\uFFFD"));
    QCOMPARE(tokenText(table, all.subspan(3, 4)), QStringLiteral("\uFFFDve "));
    // "日" (bytes 7..9) and "🙂" (bytes 14..17) cut after one, two or three
    // of their bytes: still one U+FFFD per side.
    QCOMPARE(tokenText(table, all.subspan(0, 8)), QStringLiteral("naïve \uFFFD"));
    QCOMPARE(tokenText(table, all.subspan(8, 5)), QStringLiteral("\uFFFD本"));
    QCOMPARE(tokenText(table, all.subspan(10, 7)), QStringLiteral("本 \uFFFD"));
    QCOMPARE(tokenText(table, all.subspan(15, 3)), QStringLiteral("\uFFFD"));
    QCOMPARE(tokenText(table, all.subspan(16, 1)), QStringLiteral("\uFFFD"));
    // A block of continuation bytes only, then a lone lead byte.
    QCOMPARE(tokenText(table, all.subspan(15, 2)), QStringLiteral("\uFFFD"));
    QCOMPARE(tokenText(table, all.subspan(14, 1)), QStringLiteral("\uFFFD"));
    // Malformed bytes inside the run are replaced too (one U+FFFD each).
    QCOMPARE(tokenText(table, std::vector<int32_t>{'a', 0xFF, 'b'}), QStringLiteral("a\uFFFDb"));
    // Control tokens as their text; ids outside the table add nothing.
    const std::vector<int32_t> chat = {kImStart, 'u', 's', 'e', 'r', 9999, -3};
    QCOMPARE(tokenText(table, chat), QStringLiteral("<|im_start|>user"));
  }

  void controlCharactersAreVisible() {
    QCOMPARE(visibleText(QStringLiteral("a\nb\tc\rd\x1b" "e\x7f"), 100),
             QStringLiteral("a\u21B5b\u2192c\u240Dd\u241Be\u2421"));
    QCOMPARE(visibleText(QString(QChar(0)), 100), QStringLiteral("\u2400"));
    QCOMPARE(visibleText(QStringLiteral("  two spaces  "), 100), QStringLiteral("  two spaces  "));
  }

  void longTextIsElidedInTheMiddle() {
    const QString digits = QStringLiteral("0123456789").repeated(10);
    const QString cut = visibleText(digits, 23);
    QCOMPARE(cut.size(), 23);
    QCOMPARE(cut, QStringLiteral("0123456789 … 0123456789"));
    QCOMPARE(visibleText(digits, 100), digits);
    // Emoji (surrogate pairs) at the cut stay whole: no lone surrogate.
    const QString emoji = QStringLiteral("🙂").repeated(40);
    const QString cut_emoji = visibleText(emoji, 24);
    QVERIFY(cut_emoji.size() <= 25);
    QVERIFY(cut_emoji.contains(QStringLiteral(" … ")));
    QVERIFY(cut_emoji.isValidUtf16());
    QVERIFY(cut_emoji.startsWith(QStringLiteral("🙂")));
    QVERIFY(cut_emoji.endsWith(QStringLiteral("🙂")));
  }

  void htmlKeepsSpacesAndEscapesTags() {
    const QString html = preservedSpacesHtml(QStringLiteral(" <|im_start|> a&b"));
    QCOMPARE(html, QStringLiteral("<span style=\"white-space:pre-wrap\"> &lt;|im_start|&gt; a&amp;b</span>"));
  }
};

QTEST_GUILESS_MAIN(TokenTextTest)
#include "token_text_test.moc"
