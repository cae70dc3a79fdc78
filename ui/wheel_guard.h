// WheelGuard: the mouse wheel scrolls a form instead of changing the value
// under the pointer. In a scrolled form (the settings dialog, the memory
// panel's what-if fields) a spin box or combo box that passes under the
// pointer took the wheel for itself: scrolling the Engine tab down changed
// the KV budget from 512 to 503 MiB without a word. Installed on the
// application, it hands a wheel event over such a field to the form unless
// the field has the keyboard focus (clicked, or tabbed to): then the wheel
// steps the value, as users of such a field expect. Fields outside a
// scrolled area keep Qt's behaviour. A turn of the wheel no longer gives a
// field the focus (its Qt::WheelFocus policy becomes Qt::StrongFocus when
// it is polished). A plot without wheel zoom (the Plots dock's strips) hands
// the wheel to the scrolled area it sits in too.
//
// Tests: tests/ui/wheel_guard_test.cpp.
#pragma once

#include <QObject>

namespace kvscope::ui {

class WheelGuard : public QObject {
  Q_OBJECT
 public:
  explicit WheelGuard(QObject* parent = nullptr) : QObject(parent) {}

  // Installs one guard on the application (owned by it); the app's main()
  // calls it once.
  static void install();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
};

}  // namespace kvscope::ui
