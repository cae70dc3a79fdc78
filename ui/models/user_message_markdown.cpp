// A user's message as the chat renders it (see user_message_markdown.h).
#include "models/user_message_markdown.h"

#include <QStringList>

#include "models/markdown_code_blocks.h"

namespace kvscope::ui {
namespace {

bool isBlank(const QString& line) { return line.trimmed().isEmpty(); }

}  // namespace

QString userMessageMarkdown(QString text) {
  // "\r\n" pasted from elsewhere: the reader ends a line at the "\r" too, so
  // a break's two spaces after it would make a blank line of their own.
  text.replace(QStringLiteral("\r\n"), QStringLiteral("\n"));
  if (text.size() > kVerbatimMessageChars) {
    const QString fence = fenceLongerThanAnyIn(text);
    return fence + QLatin1Char('\n') + text + QLatin1Char('\n') + fence;
  }
  QStringList lines = text.split(QLatin1Char('\n'));
  FenceTracker fences;
  for (qsizetype i = 0; i + 1 < lines.size(); ++i) {
    QString& line = lines[i];
    if (fences.next(line) != FenceLine::Text) continue;
    // A break only between two lines of one paragraph; one that ends in a
    // backslash or two spaces already has it. A line indented four spaces
    // or a tab may be code, whose trailing spaces would be copied with it.
    if (isBlank(line) || isBlank(lines[i + 1]) || line.endsWith(QLatin1Char('\\')) ||
        line.endsWith(QStringLiteral("  ")) || line.startsWith(QStringLiteral("    ")) ||
        line.startsWith(QLatin1Char('\t'))) {
      continue;
    }
    line += QStringLiteral("  ");
  }
  return lines.join(QLatin1Char('\n'));
}

}  // namespace kvscope::ui
