// ToolTipWrap: long plain-text tooltips wrap instead of running across the
// screen. Qt shows a plain-text tooltip on one line however long it is, and
// the app's tooltips explain settings and checks in a sentence or two: the
// invariance panel's ran about 1,400 px wide. Installed on the application,
// it shows a widget's plain tooltip longer than kWrapAfterChars as rich
// text kWrapWidthPx wide, which Qt wraps. Rich-text tooltips and the
// short ones are left to Qt, and so are an item view's (a model's
// ToolTipRole), which the view shows itself.
//
// Tests: tests/ui/tooltip_wrap_test.cpp.
#pragma once

#include <QObject>
#include <QString>

namespace kvscope::ui {

class ToolTipWrap : public QObject {
  Q_OBJECT
 public:
  static constexpr int kWrapAfterChars = 80;
  static constexpr int kWrapWidthPx = 420;  // device-independent pixels

  explicit ToolTipWrap(QObject* parent = nullptr) : QObject(parent) {}

  // Installs one on the application (owned by it); the app's main() calls it once.
  static void install();
  // The tooltip text Qt is given for `text`: a wrapping paragraph when it is
  // plain and long, else `text` itself.
  static QString wrapped(const QString& text);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
};

}  // namespace kvscope::ui
