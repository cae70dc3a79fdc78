// How the chat shows a message the user wrote: as Markdown, as replies are
// shown (a pasted ``` block stays code), but with every line break the user
// typed kept. Markdown joins a paragraph's lines (a "soft" break), which is
// not what a person pasting a list of lines or a poem meant, and Qt 6.4's
// Markdown reader takes time quadratic in a paragraph's soft breaks: a
// 60 KB paste of 756 lines held the window for 8 s when it was sent, and
// again whenever the conversation was drawn; with hard breaks, 58 ms.
//
// A message longer than kVerbatimMessageChars is shown exactly as typed, in
// a fenced block: long lists are quadratic in that reader too (756 items,
// 3.7 s), and a text that long is a paste, not something written in
// Markdown.
#pragma once

#include <QString>

namespace kvscope::ui {

inline constexpr int kVerbatimMessageChars = 8192;

// The Markdown the chat renders for `text`: each line followed by another
// non-blank line outside a fenced code block ends in a hard break; or, past
// kVerbatimMessageChars, the whole text in a fence that nothing in it closes.
QString userMessageMarkdown(QString text);

}  // namespace kvscope::ui
