// ChatWidget's reply being written (see chat_widget.h): rendered 25 times a
// second as tokens arrive, part by part. The blocks later tokens can no
// longer change are rendered once and kept (models/markdown_stream.h); only
// the rest is replaced on each render, so its cost does not grow with the
// reply (tests/ui/bench/chat_stream_bench.cpp).
#include <algorithm>

#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextDocumentFragment>
#include <QTextList>
#include <QTimer>

#include "chat_widget.h"
#include "models/draft_spans.h"
#include "palette_colors.h"

namespace kvscope::ui {
namespace {

// Inserts `markdown`, rendered, at the cursor, which is at the start of an
// empty block, so that the blocks are those of the Markdown rendered whole.
// Qt merges a fragment's first block into the block at the cursor, keeping
// that block's formats (a code block or heading would lose its own), except
// a list item, which it sets after that block, leaving it empty (the stream
// would show a blank line that the reply rendered whole does not have).
// So the first block takes the fragment's formats, or the empty block
// becomes the list's first item in place of the item's own block.
void insertRenderedMarkdown(QTextCursor& cursor, const QString& markdown) {
  QTextDocument* document = cursor.document();
  const int at = cursor.position();
  QTextDocument part;
  part.setMarkdown(markdown, kChatMarkdown);
  const QTextBlock first = part.begin();
  cursor.insertFragment(QTextDocumentFragment(&part));
  const QTextBlock target = document->findBlock(at);
  QTextCursor fix(target);
  if (first.textList() == nullptr) {
    fix.setBlockFormat(first.blockFormat());
    fix.setBlockCharFormat(first.charFormat());
    return;
  }
  const QTextBlock item = target.next();
  if (target.textList() != nullptr || !target.text().isEmpty() || !item.isValid() || item.textList() == nullptr) return;
  fix.setBlockFormat(item.blockFormat());
  fix.setBlockCharFormat(item.charFormat());
  item.textList()->add(target);
  fix.movePosition(QTextCursor::NextBlock);
  fix.deletePreviousChar();  // the item's text joins the empty block, which now has its formats
}

}  // namespace

void ChatWidget::renderStream() {
  render_timer_->stop();
  if (stream_start_ < 0) return render();
  const bool nested = moving_view_;  // inside render(), which puts the place back itself
  moving_view_ = true;
  const QString text = pending_.texts.value(pending_.shown);
  if (frozen_end_ < stream_start_ || frozen_reply_ != pending_.shown || text.size() < frozen_chars_) {
    // A new rendering, another reply shown, or not this text grown: from its start.
    frozen_end_ = stream_start_;
    frozen_chars_ = 0;
    frozen_reply_ = pending_.shown;
    stable_prefix_.reset();
  }
  QTextCursor cursor(view_->document());
  cursor.setPosition(frozen_end_);
  cursor.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
  cursor.removeSelectedText();
  // The block left at the cut keeps the formats of the first block removed,
  // a list item's list among them: the tail inserted next would then start
  // with an item of that old list, and a new list numbered from 1 again
  // would follow ("1. Dog", "1. Fish", "2. Bird"). A plain block instead.
  cursor.setBlockFormat(QTextBlockFormat());
  cursor.setBlockCharFormat(QTextCharFormat());
  // Blocks that later tokens can no longer change are rendered once and kept
  // (models/markdown_stream.h); only the rest is rendered again each time.
  const int stable = stable_prefix_.advance(text);
  if (stable > frozen_chars_) {
    const int before = cursor.position();
    renderStreamPart(cursor, text, frozen_chars_, stable);
    // The next part starts in a block of its own, with no list or code
    // format carried over; the kept blocks end before it, so replacing what
    // follows never touches them.
    if (cursor.position() > before) cursor.insertBlock(QTextBlockFormat(), QTextCharFormat());
    frozen_end_ = cursor.position();
    frozen_chars_ = stable;
  }
  if (text.isEmpty()) {
    insertRenderedMarkdown(cursor, tr("*…*"));
  } else if (text.size() > frozen_chars_) {
    renderStreamPart(cursor, text, frozen_chars_, static_cast<int>(text.size()));
  }
  markdown_ = markdown_head_ + QStringLiteral("\n\n") + (text.isEmpty() ? tr("*…*") : text);
  if (nested) return;
  moving_view_ = false;
  restoreViewPlace();
}

void ChatWidget::renderStreamPart(QTextCursor& cursor, const QString& text, int from, int to) {
  QString part = text.mid(from, to - from);
  while (part.endsWith(QLatin1Char('\n'))) part.chop(1);  // the blank line that ended it
  if (part.trimmed().isEmpty()) return;
  const int at = cursor.position();
  insertRenderedMarkdown(cursor, part);
  const size_t shown = static_cast<size_t>(pending_.shown);
  if (!draft_tint_ || shown >= pending_.from_draft.size()) return;
  // The accepted drafts' characters in this part, found in what it rendered.
  TextSpans spans;
  for (const TextSpan& span : pending_.from_draft[shown]) {
    const int begin = std::max(span.begin, from);
    const int end = std::min(span.begin + span.length, from + static_cast<int>(part.size()));
    if (begin < end) spans.push_back({begin - from, end - begin});
  }
  if (spans.empty()) return;
  QTextCursor rendered(view_->document());
  rendered.setPosition(at);
  rendered.setPosition(cursor.position(), QTextCursor::KeepAnchor);
  tintSpans(view_->document(), at, spansInRendering(part, spans, rendered.selectedText()),
            draftTokenBackground(view_->palette()));
}

QString ChatWidget::streamText() const {
  if (stream_start_ < 0) return QString();
  QTextCursor cursor(view_->document());
  cursor.setPosition(stream_start_);
  cursor.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
  return cursor.selectedText();
}

TextSpans ChatWidget::tintedSpans() const {
  if (stream_start_ < 0) return {};
  return spansWithBackground(*view_->document(), stream_start_, draftTokenBackground(view_->palette()));
}

void ChatWidget::rerenderStream() {
  frozen_end_ = -1;
  renderStream();
}

}  // namespace kvscope::ui
