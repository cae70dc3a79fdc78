// Where the text of accepted speculative draft tokens ends up once a reply is
// rendered, so the chat can tint it (ChatWidget, View > Tint accepted draft
// tokens). The worker marks the draft tokens' characters in the reply's
// Markdown source (TextSpans); the chat shows the Markdown rendered, which
// drops syntax (`**`, list markers, code fences) and turns line breaks into
// paragraph breaks. The rendering keeps the source's visible characters in
// order, so each rendered character is matched with the next source character
// equal to it (any white space matches any white space), skipping source
// characters the rendering dropped. Plain text maps exactly; Markdown syntax
// that repeats the character after it can shift a tint by a few characters.
#pragma once

#include <QColor>
#include <QString>

#include "engine_types.h"

class QTextDocument;

namespace kvscope::ui {

// `source_spans` (in `source`, ordered, not overlapping) mapped into
// `rendered`, adjacent rendered characters merged into one span.
TextSpans spansInRendering(const QString& source, const TextSpans& source_spans, const QString& rendered);

// Gives the characters of `spans` (relative to document position `start`)
// the background `color`: a format only, the text stays as it is.
void tintSpans(QTextDocument* document, int start, const TextSpans& spans, const QColor& color);
// The runs of characters from position `start` on whose background is `color`
// (relative to `start`): what tintSpans left, for tests.
TextSpans spansWithBackground(const QTextDocument& document, int start, const QColor& color);

}  // namespace kvscope::ui
