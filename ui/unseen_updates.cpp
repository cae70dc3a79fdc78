// runWhenSeen and updateWhenSeen (see unseen_updates.h).
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
  RunDeferred when = RunDeferred::AfterShowOrPaint;

 protected:
  bool eventFilter(QObject*, QEvent* event) override {
    if (!pending) return false;
    if (when == RunDeferred::BeforePaint) {
      // Now, so that the paint under way draws what the update made.
      if (event->type() == QEvent::Paint) runPending();
    } else if (event->type() == QEvent::Show || event->type() == QEvent::Paint) {
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

}  // namespace

bool onScreen(const QWidget& widget) { return widget.isVisible() && !widget.visibleRegion().isEmpty(); }

void runWhenSeen(QWidget* widget, std::function<void()> update, RunDeferred when) {
  DeferredUpdate* deferred = deferredOf(widget);
  if (!deferred) deferred = new DeferredUpdate(widget);
  deferred->pending = std::move(update);
  deferred->when = when;
}

void dropDeferredUpdate(QWidget* widget) {
  if (DeferredUpdate* deferred = deferredOf(widget)) deferred->pending = nullptr;
}

bool updateIsDeferred(const QWidget* widget) {
  const DeferredUpdate* deferred = deferredOf(widget);
  return deferred && deferred->pending;
}

void updateWhenSeen(QWidget* widget, std::function<void()> update) {
  // Not in a shown window: no one to wait for.
  if (!widget->window()->isVisible() || onScreen(*widget)) {
    dropDeferredUpdate(widget);  // superseded
    update();
    return;
  }
  runWhenSeen(widget, std::move(update), RunDeferred::AfterShowOrPaint);
}

}  // namespace kvscope::ui

#include "unseen_updates.moc"
