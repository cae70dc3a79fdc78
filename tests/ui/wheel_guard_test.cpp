// WheelGuard (ui/wheel_guard.h): over a field of a scrolled form, the wheel
// leaves the value alone unless the field has the focus; focused, it steps
// the value; outside a scrolled area nothing changes; and a wheel turn no
// longer gives a spin box the focus; over a plot that does not zoom, the
// wheel scrolls the area. Offscreen.
#include <QtTest>

#include <QComboBox>
#include <QScrollBar>
#include <QScrollArea>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <qcustomplot.h>

#include "wheel_guard.h"

using kvscope::ui::WheelGuard;

namespace {

// One notch down over `w` (delivered as QApplication delivers it to a
// widget); whether it was accepted.
bool wheelDown(QWidget* w) {
  const QPointF at(w->width() / 2.0, w->height() / 2.0);
  QWheelEvent event(at, w->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(w, &event);
  return event.isAccepted();
}

}  // namespace

class WheelGuardTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { WheelGuard::install(); }

  void aScrolledFormsFieldsIgnoreTheWheelUnlessFocused() {
    QScrollArea area;
    auto* form = new QWidget;
    auto* layout = new QVBoxLayout(form);
    auto* budget = new QSpinBox;
    budget->setRange(1, 4096);
    budget->setValue(512);
    auto* choice = new QComboBox;
    choice->addItems({QStringLiteral("f32"), QStringLiteral("tensor cores")});
    auto* other = new QSpinBox;
    layout->addWidget(budget);
    layout->addWidget(choice);
    layout->addWidget(other);
    area.setWidget(form);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    QCOMPARE(budget->focusPolicy(), Qt::StrongFocus);  // a wheel turn gives no focus

    other->setFocus();
    wheelDown(budget);
    wheelDown(choice);
    QCOMPARE(budget->value(), 512);
    QCOMPARE(choice->currentIndex(), 0);

    budget->setFocus();
    QTRY_VERIFY(budget->hasFocus());
    wheelDown(budget);
    QCOMPARE(budget->value(), 511);  // focused: the wheel is the field's
  }

  // A plot that does not zoom with the wheel, in a scrolled dock (the Plots
  // dock's strips): the wheel scrolls the dock; QCustomPlot kept it before.
  void theWheelOverAStripPlotScrollsItsArea() {
    QScrollArea area;
    auto* column = new QWidget;
    auto* layout = new QVBoxLayout(column);
    auto* plot = new QCustomPlot;
    plot->setMinimumHeight(300);
    layout->addWidget(plot);
    layout->addWidget(new QCustomPlot);
    column->setMinimumHeight(900);
    area.setWidget(column);
    area.setWidgetResizable(true);
    area.resize(300, 200);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    QCOMPARE(area.verticalScrollBar()->value(), 0);
    wheelDown(plot);
    QVERIFY(area.verticalScrollBar()->value() > 0);

    plot->setInteraction(QCP::iRangeZoom);  // a plot that zooms keeps the wheel
    const int before = area.verticalScrollBar()->value();
    QVERIFY(wheelDown(plot));
    QCOMPARE(area.verticalScrollBar()->value(), before);
  }

  void fieldsOutsideAScrolledAreaKeepTheWheel() {
    QWidget window;
    auto* layout = new QVBoxLayout(&window);
    auto* box = new QSpinBox;
    box->setValue(5);
    layout->addWidget(box);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    wheelDown(box);
    QCOMPARE(box->value(), 4);
  }
};

QTEST_MAIN(WheelGuardTest)
#include "wheel_guard_test.moc"
