// updateWhenSeen (see unseen_updates.h).
#include "unseen_updates.h"

#include <QEvent>
#include <QMetaObject>
#include <QObject>
#include <QWidget>

namespace kvscope::ui {
namespace {

// Lives as a child of its widget (found by type: Q_OBJECT makes it findable)
// and watches the widget's Show and Paint events.
class DeferredUpdate : public QObject {
  Q_OBJECT

 public:
  explicit DeferredUpdate(QWidget* widget) : QObject(widget) { widget->installEventFilter(this); }

  std::function<void()> pending;

 protected:
  bool eventFilter(QObject*, QEvent* event) override {
    if (pending && (event->type() == QEvent::Show || event->type() == QEvent::Paint)) {
      // After this event: an update inside a paint would lay out and repaint
      // in the middle of it.
      QMetaObject::invokeMethod(this, &DeferredUpdate::runPending, Qt::QueuedConnection);
    }
    return false;
  }

 private:
  void runPending() {
    if (!pending) return;
    const std::function<void()> update = std::move(pending);
    pending = nullptr;
    update();
  }
};

DeferredUpdate* deferredOf(const QWidget* widget) {
  return widget->findChild<DeferredUpdate*>(QString(), Qt::FindDirectChildrenOnly);
}

bool canBeSeen(const QWidget& widget) {
  if (!widget.window()->isVisible()) return true;  // not in a shown window: no one to wait for
  return widget.isVisible() && !widget.visibleRegion().isEmpty();
}

}  // namespace

void updateWhenSeen(QWidget* widget, std::function<void()> update) {
  DeferredUpdate* deferred = deferredOf(widget);
  if (canBeSeen(*widget)) {
    if (deferred) deferred->pending = nullptr;  // superseded
    update();
    return;
  }
  if (!deferred) deferred = new DeferredUpdate(widget);
  deferred->pending = std::move(update);
}

bool updateIsDeferred(const QWidget* widget) {
  const DeferredUpdate* deferred = deferredOf(widget);
  return deferred && deferred->pending;
}

}  // namespace kvscope::ui

#include "unseen_updates.moc"
