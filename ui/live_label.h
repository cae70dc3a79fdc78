// LiveLabel: a line of plain text that changes many times a second (the KV
// summary over the block map, the step counter in the status bar). A QLabel
// invalidates its window's layout on every setText, and with a snapshot 20
// times a second the main window was laid out again 20 times a second, its
// docks and word-wrapped rich text with it (tests/ui/live_label_test.cpp
// counts the layout requests). A LiveLabel repaints itself, and asks for a
// new layout only when the text needs more room than its size hint gave:
// wider (the hint only grows, so the status bar does not jitter as digits
// change) or, word-wrapped, more or fewer lines at its width.
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

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;
  bool hasHeightForWidth() const override { return wrap_; }
  int heightForWidth(int width) const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  int textFlags() const;
  int textWidth() const;  // unwrapped

  QString text_;
  bool wrap_ = false;
  int widest_ = 0;  // the widest unwrapped text so far (the hint's width)
};

}  // namespace kvscope::ui
