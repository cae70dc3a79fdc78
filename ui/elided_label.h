// ElidedLabel: one line of plain text that, when its room is narrower than
// the text, ends in "…" and shows the whole text as its tooltip. The status
// bar's model summary ("Smollm2 135M ... · 728 KV blocks × 16 tokens · paged ·
// prefix caching on") was cut mid-word at a 1024-px window, its end running
// into the step counter beside it; a QLabel clips, and its width hint held
// the window wider than such a screen. Tests: tests/ui/elided_label_test.cpp.
#pragma once

#include <QString>
#include <QWidget>

namespace kvscope::ui {

class ElidedLabel : public QWidget {
  Q_OBJECT
 public:
  explicit ElidedLabel(const QString& text = QString(), QWidget* parent = nullptr);

  QString text() const { return text_; }
  void setText(const QString& text);
  // What is drawn at the current width: the text, or its start and "…".
  QString shownText() const;

  QSize sizeHint() const override;         // the whole text
  QSize minimumSizeHint() const override;  // a few characters

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void updateToolTip();

  QString text_;
};

}  // namespace kvscope::ui
