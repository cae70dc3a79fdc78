// StableMarkdownPrefix (see markdown_stream.h).
#include "models/markdown_stream.h"

namespace kvscope::ui {

int StableMarkdownPrefix::advance(const QString& text) {
  if (text.size() < scanned_) reset();  // not an extension: start again
  while (true) {
    const int end = text.indexOf(QLatin1Char('\n'), scanned_);
    if (end < 0) break;  // the last line is still being written
    const QString line = text.mid(scanned_, end - scanned_);
    if (fences_.next(line) == FenceLine::Text && line.trimmed().isEmpty() && scanned_ > 0) {
      stable_ = end + 1;  // a blank line outside a fence: the next block starts after it
    }
    scanned_ = end + 1;
  }
  return stable_;
}

}  // namespace kvscope::ui
