// Source spans -> rendered spans (see draft_spans.h).
#include "models/draft_spans.h"

#include <algorithm>
#include <vector>

#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>

namespace kvscope::ui {
namespace {

// Appends [begin, end) to `spans`, merged into the last span when they touch.
void appendRun(TextSpans& spans, int begin, int end) {
  if (!spans.empty() && spans.back().begin + spans.back().length == begin) {
    spans.back().length += end - begin;
  } else {
    spans.push_back({begin, end - begin});
  }
}

// How far past the last matched source character a rendered character is
// looked for: longer than the syntax Markdown drops between two visible
// characters (a code fence with its language, a link's target), short enough
// that a character the rendering added (none today) cannot pull the match
// far ahead.
constexpr int kLookahead = 256;

bool sameCharacter(QChar source, QChar rendered) {
  // isSpace covers the paragraph (U+2029) and line (U+2028) separators a
  // QTextDocument puts where the source had line breaks.
  return source == rendered || (source.isSpace() && rendered.isSpace());
}

}  // namespace

TextSpans spansInRendering(const QString& source, const TextSpans& source_spans, const QString& rendered) {
  std::vector<bool> in_span(static_cast<size_t>(source.size()), false);
  for (const TextSpan& span : source_spans) {
    const int begin = std::clamp(span.begin, 0, static_cast<int>(source.size()));
    const int end = std::clamp(span.begin + span.length, begin, static_cast<int>(source.size()));
    std::fill(in_span.begin() + begin, in_span.begin() + end, true);
  }
  TextSpans out;
  int next = 0;  // the first source character not matched yet
  for (int r = 0; r < rendered.size(); ++r) {
    const int limit = std::min(static_cast<int>(source.size()), next + kLookahead);
    int match = next;
    while (match < limit && !sameCharacter(source[match], rendered[r])) ++match;
    if (match == limit) continue;  // not from the source: left untinted, the match stays put
    next = match + 1;
    if (in_span[static_cast<size_t>(match)]) appendRun(out, r, r + 1);
  }
  return out;
}

void tintSpans(QTextDocument* document, int start, const TextSpans& spans, const QColor& color) {
  QTextCharFormat tint;
  tint.setBackground(color);
  QTextCursor cursor(document);
  for (const TextSpan& span : spans) {
    cursor.setPosition(start + span.begin);
    cursor.setPosition(start + span.begin + span.length, QTextCursor::KeepAnchor);
    cursor.mergeCharFormat(tint);
  }
}

TextSpans spansWithBackground(const QTextDocument& document, int start, const QColor& color) {
  TextSpans out;
  for (QTextBlock block = document.findBlock(start); block.isValid(); block = block.next()) {
    for (auto it = block.begin(); !it.atEnd(); ++it) {
      const QTextFragment fragment = it.fragment();
      const QBrush background = fragment.charFormat().background();
      if (background.style() == Qt::NoBrush || background.color() != color) continue;
      const int begin = std::max(fragment.position(), start) - start;
      const int end = fragment.position() + fragment.length() - start;
      if (end > begin) appendRun(out, begin, end);
    }
  }
  return out;
}

}  // namespace kvscope::ui
