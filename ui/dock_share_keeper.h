// DockShareKeeper: keeps a main window's side docks at the share of its
// width they had, when the window is resized. QMainWindow gives a whole
// resize to its central widget: a window made narrow (snapped to half the
// screen) squeezes the docks to their minimum, and made wide again it left
// them there, the inspector's tables cut off, and saved that layout for the
// next start.
//
// The shares are taken when the window is first shown, when a drag of a
// dock's edge ends (a mouse release on the window, QMainWindow grabbing the
// mouse while its separator moves, after which the docks' widths differ
// from the press's) and when rememberShares() is called; not
// from the docks' own resizes, which a window resize causes too, clamped at
// their minimum. A layout restored before the window is shown is what its
// first show takes.
//   tested by tests/ui/main_window_state_test.cpp
#pragma once

#include <vector>

#include <QObject>

class QDockWidget;
class QMainWindow;

namespace kvscope::ui {

class DockShareKeeper : public QObject {
  Q_OBJECT
 public:
  // `docks`: one dock per side dock area whose width is kept (a tabified or
  // stacked group moves with it). A child of `window`.
  DockShareKeeper(QMainWindow* window, std::vector<QDockWidget*> docks);

  // Takes the docks' widths now as their shares of the window's.
  void rememberShares();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void applyShares();
  std::vector<int> dockWidths() const;

  QMainWindow* window_;
  std::vector<QDockWidget*> docks_;
  std::vector<double> shares_;  // [docks_] width / window width; empty until taken
  std::vector<int> widths_at_press_;  // [docks_] at the last mouse press on the window
};

}  // namespace kvscope::ui
