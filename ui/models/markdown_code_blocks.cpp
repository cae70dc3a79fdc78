// Fenced code block scanner (see markdown_code_blocks.h).
#include "models/markdown_code_blocks.h"

#include <QStringList>

namespace kvscope::ui {

bool parseFence(const QString& line, Fence* fence) {
  int i = 0;
  while (i < line.size() && i < 3 && line[i] == QLatin1Char(' ')) ++i;
  if (i >= line.size()) return false;
  const QChar ch = line[i];
  if (ch != QLatin1Char('`') && ch != QLatin1Char('~')) return false;
  int n = 0;
  while (i + n < line.size() && line[i + n] == ch) ++n;
  if (n < 3) return false;
  fence->ch = ch;
  fence->length = n;
  fence->rest = line.mid(i + n).trimmed();
  // A backtick fence's info string may not contain backticks (CommonMark).
  return !(ch == QLatin1Char('`') && fence->rest.contains(QLatin1Char('`')));
}

bool closesFence(const Fence& opening, const Fence& line) {
  return line.ch == opening.ch && line.length >= opening.length && line.rest.isEmpty();
}

FenceLine FenceTracker::next(const QString& line) {
  Fence fence;
  const bool is_fence = parseFence(line, &fence);
  if (open_) {
    if (!is_fence || !closesFence(opening_, fence)) return FenceLine::Code;
    open_ = false;
    return FenceLine::Closes;
  }
  if (!is_fence) return FenceLine::Text;
  open_ = true;
  opening_ = fence;
  return FenceLine::Opens;
}

QString withOpenFenceClosed(const QString& markdown) {
  FenceTracker fences;
  FenceLine last = FenceLine::Text;
  for (const QString& line : markdown.split(QLatin1Char('\n'))) last = fences.next(line);
  if (last != FenceLine::Opens && last != FenceLine::Code) return markdown;
  const Fence& open = fences.opening();
  return markdown + QLatin1Char('\n') + QString(open.length, open.ch);
}

std::vector<CodeBlock> fencedCodeBlocks(const QString& markdown) {
  std::vector<CodeBlock> blocks;
  const QStringList lines = markdown.split(QLatin1Char('\n'));
  FenceTracker fences;
  QStringList code;
  for (int i = 0; i < lines.size(); ++i) {
    switch (fences.next(lines[i])) {
      case FenceLine::Opens: code.clear(); break;
      case FenceLine::Code: code << lines[i]; break;
      case FenceLine::Closes: blocks.push_back({fences.opening().rest, code.join(QLatin1Char('\n')), i}); break;
      case FenceLine::Text: break;
    }
  }
  return blocks;
}

}  // namespace kvscope::ui
