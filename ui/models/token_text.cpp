// Token ids as text (see token_text.h).
#include "models/token_text.h"

#include <algorithm>
#include <string_view>

namespace kvscope::ui {

namespace {

bool isContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Bytes a character's lead byte says it has (1 to 4), 0 for a byte that
// cannot start one.
size_t utf8Length(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u < 0x80) return 1;
  if ((u & 0xE0) == 0xC0) return 2;
  if ((u & 0xF0) == 0xE0) return 3;
  if ((u & 0xF8) == 0xF0) return 4;
  return 0;
}

// Continuation bytes at the start: the end of a character that began before.
size_t cutCharacterHead(std::string_view bytes) {
  size_t n = 0;
  while (n < bytes.size() && n < 3 && isContinuationByte(bytes[n])) ++n;
  return n;
}

// The start of a character whose last bytes are missing at the end (0 if none).
size_t cutCharacterTail(std::string_view bytes) {
  for (size_t back = 1; back <= std::min<size_t>(3, bytes.size()); ++back) {
    const char c = bytes[bytes.size() - back];
    if (isContinuationByte(c)) continue;
    return utf8Length(c) > back ? back : 0;
  }
  return 0;
}

}  // namespace

BlockTokens blockTokens(const EngineSnapshot& snapshot, int block) {
  if (block < 0 || static_cast<size_t>(block) >= snapshot.blocks.size() || snapshot.block_size <= 0) return {};
  const int32_t fill = snapshot.blocks[static_cast<size_t>(block)].fill;
  for (const SequenceSnapshot& seq : snapshot.sequences) {
    if (seq.state == SequenceState::Swapped) continue;
    const auto it = std::find(seq.block_table.begin(), seq.block_table.end(), block);
    if (it == seq.block_table.end()) continue;
    BlockTokens out;
    out.sequence = &seq;
    out.position = static_cast<int32_t>(it - seq.block_table.begin());
    const int64_t first = static_cast<int64_t>(out.position) * snapshot.block_size;
    const int64_t end = std::min<int64_t>(first + std::max(fill, 0), static_cast<int64_t>(seq.tokens.size()));
    out.first_token = static_cast<int32_t>(first);
    if (end > first) out.ids = std::span<const int32_t>(seq.tokens).subspan(static_cast<size_t>(first),
                                                                              static_cast<size_t>(end - first));
    return out;
  }
  return {};
}

QString tokenText(const std::vector<std::string>& table, std::span<const int32_t> ids) {
  std::string bytes;
  for (int32_t id : ids) {
    if (id >= 0 && static_cast<size_t>(id) < table.size()) bytes += table[static_cast<size_t>(id)];
  }
  // A character cut by the run's edges (a block boundary) becomes one U+FFFD
  // on each side; Qt would give one per byte. Malformed bytes inside the run
  // are left to fromUtf8 (one U+FFFD each).
  const std::string_view view(bytes);
  const size_t head = cutCharacterHead(view);
  const size_t tail = head < view.size() ? cutCharacterTail(view.substr(head)) : 0;
  const std::string_view whole = view.substr(head, view.size() - head - tail);
  QString text = QString::fromUtf8(whole.data(), static_cast<qsizetype>(whole.size()));
  if (head) text.prepend(QChar::ReplacementCharacter);
  if (tail) text.append(QChar::ReplacementCharacter);
  return text;
}

QString visibleText(const QString& text, int max_chars) {
  QString out;
  out.reserve(text.size());
  for (QChar c : text) {
    const char16_t u = c.unicode();
    if (u == u'\n') {
      out += QChar(0x21B5);  // ↵
    } else if (u == u'\t') {
      out += QChar(0x2192);  // →
    } else if (u < 0x20) {
      out += QChar(static_cast<char16_t>(0x2400 + u));  // ␀ .. ␟
    } else if (u == 0x7F) {
      out += QChar(0x2421);  // ␡
    } else {
      out += c;
    }
  }
  max_chars = std::max(max_chars, 8);
  if (out.size() <= max_chars) return out;
  const QString ellipsis = QStringLiteral(" … ");
  qsizetype head = (max_chars - ellipsis.size()) / 2;
  qsizetype tail_start = out.size() - (max_chars - ellipsis.size() - head);
  // Keep surrogate pairs (emoji, rare CJK) whole on both sides of the cut.
  if (head > 0 && out[head - 1].isHighSurrogate()) --head;
  if (tail_start < out.size() && out[tail_start].isLowSurrogate()) ++tail_start;
  return out.left(head) + ellipsis + out.mid(tail_start);
}

QString preservedSpacesHtml(const QString& text) {
  return QStringLiteral("<span style=\"white-space:pre-wrap\">%1</span>").arg(text.toHtmlEscaped());
}

}  // namespace kvscope::ui
