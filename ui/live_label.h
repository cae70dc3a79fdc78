// LiveLabel: a line of plain text that changes many times a second (the KV
// summary over the block map, the step counter in the status bar). A QLabel
// invalidates its window's layout on every setText, and with a snapshot 20
// times a second the main window was laid out again 20 times a second, its
// docks and word-wrapped rich text with it. A LiveLabel repaints itself, and asks for a
// new layout only when the text needs more room than its size hint gave:
// wider (the hint only grows, so the status bar does not jitter as digits
// change) or, word-wrapped, more or fewer lines at its width. Elided, it
// draws the start of a text too wide for its room and "…", the whole text
// then its tooltip, and may shrink to a few characters: the status bar's
// model summary, which a 1024-px window cut mid-word into the step counter.
// Tests: tests/ui/unseen_updates_test.cpp (layout requests),
// tests/ui/live_label_test.cpp (elision).
#pragma once

#include <QString>
#include <QWidget>

namespace kvscope::ui {

class LiveLabel : public QWidget {
  Q_OBJECT
 public:
  explicit LiveLabel(QWidget* parent = nullptr);

  QString text() const { return text_; }
  void setText(const QString& text);
  // Wraps at word boundaries to the widget's width (height for width).
  void setWordWrap(bool on);
  // One line, ending in "…" where the room is narrower than the text.
  void setElided(bool on);
  // What is drawn at the current width (elided: maybe the start and "…").
  QString shownText() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;
  bool hasHeightForWidth() const override { return wrap_; }
  int heightForWidth(int width) const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void changeEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  int textFlags() const;
  int textWidth() const;  // unwrapped

  QString text_;
  void updateElidedToolTip();

  bool wrap_ = false;
  bool elide_ = false;
  int widest_ = 0;  // the widest unwrapped text so far (the hint's width)
};

}  // namespace kvscope::ui
