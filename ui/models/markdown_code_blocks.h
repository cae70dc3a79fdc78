// Fenced code blocks in a chat message's Markdown (``` or ~~~, CommonMark
// rules: a fence closes with the same character, at least as long, nothing
// after it). The chat puts a "Copy code" link after each closed block and
// copies the block's text when it is clicked; a block still being streamed
// (no closing fence yet) gets no link.
#pragma once

#include <vector>

#include <QString>
#include <QStringList>

namespace kvscope::ui {

struct CodeBlock {
  QString info;   // the text after the opening fence ("cpp", "python", ...)
  QString code;   // the lines between the fences, without the final newline
  int end_line = 0;  // the closing fence's line (0-based)
};

// A fence line: up to three spaces of indent, then 3+ backticks or tildes,
// then the info string (`rest`, trimmed).
struct Fence {
  QChar ch;
  int length = 0;
  QString rest;
};
bool parseFence(const QString& line, Fence* fence);
// Whether fence line `line` closes the block `opening` opened.
bool closesFence(const Fence& opening, const Fence& line);

// The closed fenced blocks of `markdown`, in order.
std::vector<CodeBlock> fencedCodeBlocks(const QString& markdown);

// `markdown` with `link(i)` inserted on its own paragraph after the i-th
// closed fence. `link` returns Markdown (e.g. "[Copy code](kvscope:code/3/0)").
template <typename LinkFn>
QString withLinksAfterCodeBlocks(const QString& markdown, LinkFn link) {
  const std::vector<CodeBlock> blocks = fencedCodeBlocks(markdown);
  if (blocks.empty()) return markdown;
  QStringList lines = markdown.split(QLatin1Char('\n'));
  for (int i = static_cast<int>(blocks.size()) - 1; i >= 0; --i) {
    const int at = blocks[static_cast<size_t>(i)].end_line + 1;
    lines.insert(at, QString());
    lines.insert(at + 1, link(i));
    lines.insert(at + 2, QString());
  }
  return lines.join(QLatin1Char('\n'));
}

}  // namespace kvscope::ui
