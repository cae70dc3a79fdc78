// Fenced code blocks in a chat message's Markdown (``` or ~~~, CommonMark
// rules: a fence closes with the same character, at least as long, nothing
// after it). The chat puts a "Copy code" link after each closed block and
// copies the block's text when it is clicked; a block still being streamed
// (no closing fence yet) gets no link.
#pragma once

#include <algorithm>
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

// What a line is, read in order with the lines before it: text outside any
// fenced block, a fence that opens one, a line inside one, or its closing
// fence. One reading of fences for every scanner of the chat's Markdown.
enum class FenceLine { Text, Opens, Code, Closes };
class FenceTracker {
 public:
  FenceLine next(const QString& line);
  // The fence of the block open now (or last opened).
  const Fence& opening() const { return opening_; }

 private:
  bool open_ = false;
  Fence opening_;
};

// A fence of backticks longer than any run of them in `text`: no line of
// the text can close it (CommonMark: a closing fence is at least as long).
// Inline: the conversation store's export uses it without this library.
inline QString fenceLongerThanAnyIn(const QString& text) {
  int longest = 0;
  int run = 0;
  for (const QChar c : text) {
    run = c == QLatin1Char('`') ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return QString(std::max(3, longest + 1), QLatin1Char('`'));
}

// `markdown` with a fence left open at its end closed: a reply cut inside a
// code block (max tokens, Stop) otherwise pulled whatever the chat puts
// after it (the reply's stats line) into the block.
QString withOpenFenceClosed(const QString& markdown);

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
