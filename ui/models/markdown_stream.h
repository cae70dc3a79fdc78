// StableMarkdownPrefix: how much of a reply's Markdown, while it is still
// being written, renders the same whatever is appended to it. The chat
// renders that part once and re-renders only the rest as tokens arrive
// (ChatWidget::renderStream): re-rendering the whole reply 25 times a second
// cost time in proportion to its length, and at a GPU's speed a long reply
// held the window for a frame and more each time.
//
// The prefix ends after a blank line outside any fenced code block: what
// follows a blank line starts a new block, and what comes later cannot
// reach back into a closed paragraph, list item or block. (A list or an
// indented code block that goes on after a blank line is rendered as two
// while it streams; the finished reply is rendered whole again.)
#pragma once

#include <QString>
#include <QTextDocument>

#include "models/markdown_code_blocks.h"

namespace kvscope::ui {

// How the chat reads Markdown: GitHub's dialect without raw HTML, so a
// reply's (or a prompt's) "<b>" or "<img src=...>" shows as the text it is
// instead of being rendered.
inline constexpr QTextDocument::MarkdownFeatures kChatMarkdown{QTextDocument::MarkdownDialectGitHub |
                                                               QTextDocument::MarkdownNoHTML};

class StableMarkdownPrefix {
 public:
  // `text` must extend the text of the previous call (tokens appended);
  // scans only what is new. Returns the length of the stable prefix: 0, or
  // just after a blank line.
  int advance(const QString& text);
  void reset() { *this = StableMarkdownPrefix(); }
  int stableLength() const { return stable_; }

 private:
  int scanned_ = 0;     // complete lines scanned: text[0, scanned_)
  int stable_ = 0;
  FenceTracker fences_;  // the lines scanned so far
};

}  // namespace kvscope::ui
