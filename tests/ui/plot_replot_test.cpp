// replotWhenSeen (ui/plot_replot.h): a plot on screen replots at once; one
// scrolled out of view, or hidden, waits and replots when it is next painted
// (scrolled into view, grabbed), so what is seen is never stale. Offscreen.
//   ctest --test-dir build -R plot_replot_test
#include <QScrollArea>
#include <QScrollBar>
#include <QVBoxLayout>
#include <QtTest>
#include <qcustomplot.h>

#include "plot_replot.h"

using kvscope::ui::replotIsDeferred;
using kvscope::ui::replotWhenSeen;

class PlotReplotTest : public QObject {
  Q_OBJECT
 private slots:
  void onlyWhatCanBeSeenReplots() {
    QScrollArea area;
    area.resize(300, 200);
    auto* column = new QWidget;
    auto* layout = new QVBoxLayout(column);
    auto* top = new QCustomPlot;
    auto* bottom = new QCustomPlot;
    for (QCustomPlot* plot : {top, bottom}) {
      plot->setFixedHeight(400);
      plot->addGraph()->addData(QVector<double>{0, 1, 2}, QVector<double>{1, 3, 2});
      layout->addWidget(plot);
    }
    area.setWidget(column);
    area.setWidgetResizable(true);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    QCoreApplication::processEvents();
    int top_replots = 0, bottom_replots = 0;
    connect(top, &QCustomPlot::afterReplot, this, [&] { ++top_replots; });
    connect(bottom, &QCustomPlot::afterReplot, this, [&] { ++bottom_replots; });

    // The top plot is in the viewport: its replot is queued as before.
    replotWhenSeen(top);
    QVERIFY(!replotIsDeferred(top));
    QTRY_COMPARE(top_replots, 1);

    // The bottom one starts 400 px down, below the 200 px viewport: it waits.
    replotWhenSeen(bottom);
    QVERIFY(replotIsDeferred(bottom));
    QTest::qWait(50);
    QCOMPARE(bottom_replots, 0);

    // Scrolled into view: its first paint brings it up to date.
    area.verticalScrollBar()->setValue(area.verticalScrollBar()->maximum());

    QTRY_VERIFY(bottom_replots >= 1);
    QVERIFY(!replotIsDeferred(bottom));

    // Hidden (as behind another dock's tab): it waits, and a grab, which
    // paints it, replots it first.
    area.hide();
    const int before = top_replots;
    replotWhenSeen(top);
    QVERIFY(replotIsDeferred(top));
    QTest::qWait(50);
    QCOMPARE(top_replots, before);
    (void)top->grab();
    QCOMPARE(top_replots, before + 1);
    QVERIFY(!replotIsDeferred(top));
  }
};

QTEST_MAIN(PlotReplotTest)
#include "plot_replot_test.moc"
