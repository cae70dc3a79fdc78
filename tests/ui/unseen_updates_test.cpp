// What keeps the window from laying itself out 20 times a second for
// nothing: updateWhenSeen (ui/unseen_updates.h) runs an update at once for a
// widget on screen and puts it off for one behind a tab or scrolled out of
// view until it is shown or painted; LiveLabel (ui/live_label.h) changes its
// text without a layout request unless the text needs more room. Offscreen.
//   ctest --test-dir build -R unseen_updates_test
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QVBoxLayout>
#include <QtTest>

#include "live_label.h"
#include "unseen_updates.h"

using kvscope::ui::LiveLabel;
using kvscope::ui::updateIsDeferred;
using kvscope::ui::updateWhenSeen;

namespace {

// Counts the layout requests posted to a widget.
class LayoutRequests : public QObject {
 public:
  explicit LayoutRequests(QWidget* widget) { widget->installEventFilter(this); }
  int count = 0;

 protected:
  bool eventFilter(QObject*, QEvent* event) override {
    if (event->type() == QEvent::LayoutRequest) ++count;
    return false;
  }
};

}  // namespace

class UnseenUpdatesTest : public QObject {
  Q_OBJECT
 private slots:
  void anUpdateWaitsBehindATabAndRunsWhenShown() {
    QTabWidget tabs;
    auto* front = new QWidget;
    auto* back = new QWidget;
    tabs.addTab(front, QStringLiteral("front"));
    tabs.addTab(back, QStringLiteral("back"));
    tabs.resize(300, 200);
    tabs.show();
    QVERIFY(QTest::qWaitForWindowExposed(&tabs));

    int front_runs = 0, back_runs = 0;
    updateWhenSeen(front, [&] { ++front_runs; });
    QCOMPARE(front_runs, 1);  // on screen: at once
    updateWhenSeen(back, [&] { ++back_runs; });
    updateWhenSeen(back, [&] { back_runs += 10; });  // only the newest is kept
    QVERIFY(updateIsDeferred(back));
    QTest::qWait(30);
    QCOMPARE(back_runs, 0);
    tabs.setCurrentWidget(back);
    QTRY_COMPARE(back_runs, 10);
    QVERIFY(!updateIsDeferred(back));
  }

  void anUpdateWaitsOutOfViewAndRunsWhenPainted() {
    QScrollArea area;
    auto* column = new QWidget;
    auto* layout = new QVBoxLayout(column);
    auto* top = new QWidget;
    auto* bottom = new QWidget;
    for (QWidget* w : {top, bottom}) {
      w->setFixedHeight(400);
      layout->addWidget(w);
    }
    area.setWidget(column);
    area.setWidgetResizable(true);
    area.resize(300, 200);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    int runs = 0;
    updateWhenSeen(bottom, [&] { ++runs; });
    QVERIFY(updateIsDeferred(bottom));
    area.verticalScrollBar()->setValue(area.verticalScrollBar()->maximum());
    QTRY_COMPARE(runs, 1);
  }

  void aWidgetOutsideAShownWindowUpdatesAtOnce() {
    QWidget panel;  // never shown, as a test's panel or one being built
    int runs = 0;
    updateWhenSeen(&panel, [&] { ++runs; });
    QCOMPARE(runs, 1);
    QVERIFY(!updateIsDeferred(&panel));
  }

  void aLiveLabelAsksForALayoutOnlyWhenItNeedsMoreRoom() {
    QWidget window;
    auto* layout = new QVBoxLayout(&window);
    auto* label = new LiveLabel;
    layout->addWidget(label);
    window.resize(400, 100);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    label->setText(QStringLiteral("step 1000 · 64 running · 12.5 ms/step"));
    QCoreApplication::processEvents();
    LayoutRequests requests(&window);
    // Digits change, the width does not grow past the widest so far: repaint only.
    for (int step = 1001; step < 1050; ++step) {
      label->setText(QStringLiteral("step %1 · 64 running · 1%2.5 ms/step").arg(step).arg(step % 10));
      QCoreApplication::processEvents();
    }
    QCOMPARE(label->text(), QStringLiteral("step 1049 · 64 running · 19.5 ms/step"));
    QCOMPARE(requests.count, 0);
    // Wider than ever: the layout is asked once.
    label->setText(QStringLiteral("step 1050 · 64 running · 0 waiting · 2 swapped · 12.5 ms/step"));
    QCoreApplication::processEvents();
    QCOMPARE(requests.count, 1);
    QVERIFY(label->sizeHint().width() >= label->fontMetrics().horizontalAdvance(label->text()));

    // Word-wrapped: a text that needs another line at this width asks again.
    label->setWordWrap(true);
    QCoreApplication::processEvents();
    const int before = requests.count;
    label->setText(QStringLiteral("short"));
    QCoreApplication::processEvents();
    QCOMPARE(requests.count, before);  // one line, as before
    label->setText(QString(QStringLiteral("word ")).repeated(200));
    QCoreApplication::processEvents();
    const int many_lines = requests.count;
    QVERIFY(many_lines > before);
    QVERIFY(label->heightForWidth(label->width()) > 3 * label->fontMetrics().height());
    label->setText(QString(QStringLiteral("ward ")).repeated(200));  // as many lines
    QCoreApplication::processEvents();
    QCOMPARE(requests.count, many_lines);
    label->setText(QStringLiteral("short again"));  // back to one line
    QCoreApplication::processEvents();
    QVERIFY(requests.count > many_lines);
  }
};

QTEST_MAIN(UnseenUpdatesTest)
#include "unseen_updates_test.moc"
