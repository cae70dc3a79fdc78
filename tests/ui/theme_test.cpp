// The inspector widgets under a light and a dark palette (offscreen): each is
// grabbed into an image and the background must follow the palette (light
// pixels on a light theme, dark on a dark one) while text, axes, free cells
// and error messages keep their contrast with it; widgets restyle when the
// application palette changes at run time (the system switching theme).
//   ctest --test-dir build -R theme_test --output-on-failure
//   KVSCOPE_UI_SNAPSHOT_DIR=/tmp/shots ./build/tests/ui/theme_test  # keeps the PNGs
#include <QDir>
#include <QHeaderView>
#include <QLabel>
#include <QSpinBox>
#include <QTableView>
#include <QtTest>
#include <qcustomplot.h>

#include "block_cell_style.h"
#include "block_map_widget.h"
#include "memory_panel.h"
#include "palette_colors.h"
#include "plots_widget.h"
#include "shared_prefix_panel.h"
#include "spec_plots.h"
#include "test_palettes.h"
#include "test_snapshots.h"
#include "trace_panel.h"
#include "trace_plot.h"

using namespace kvscope;
using namespace kvscope::ui;
using test::mostContrasting;

namespace {

QImage grabbed(QWidget& w, const char* name) {
  const QImage image = w.grab().toImage();
  const QString dir = qEnvironmentVariable("KVSCOPE_UI_SNAPSHOT_DIR");
  if (!dir.isEmpty()) {
    QDir().mkpath(dir);
    image.save(dir + QLatin1Char('/') + QLatin1String(name) + QStringLiteral(".png"));
  }
  return image;
}

// The part of `image` (a grab of `top`) where `child` is.
QRect areaOf(const QWidget* child, const QWidget* top) {
  return QRect(child->mapTo(top, QPoint(0, 0)), child->size());
}

bool followsPalette(const QColor& pixel, bool dark) { return dark ? pixel.lightness() < 90 : pixel.lightness() > 200; }

QPalette paletteFor(bool dark) { return dark ? test::darkPalette() : test::lightPalette(); }

void addThemeRows() {
  QTest::addColumn<bool>("dark");
  QTest::newRow("light") << false;
  QTest::newRow("dark") << true;
}

ModelInfo smolInfo() {
  ModelInfo info;
  info.name = "SmolLM2-135M";
  info.num_layers = 30;  // the shape the memory panel's what-if plans from
  info.num_kv_heads = 3;
  info.head_dim = 64;
  info.weight_bytes = 80u << 20;
  info.kv_bytes_per_token = 46080;
  info.block_size = 16;
  info.num_kv_blocks = 91;
  info.kv_pool_bytes = 91u * 737280u;
  info.context_length = 2048;
  return info;
}

void feed(PlotsWidget& plots, int num_steps) {
  const auto base = test::makeSnapshot(3, 3, 2);
  for (int step = 1; step <= num_steps; ++step) {
    auto s = std::make_shared<EngineSnapshot>(*base);
    s->step = static_cast<uint64_t>(step);
    s->last_step.num_prefill_tokens = step % 10 == 0 ? 64 : 0;
    s->last_step.step_time_s = 0.02;
    plots.addSnapshot(s);
  }
}

// Checks one strip of `image` (a grab of `top`): background, axis line and
// tick labels against `palette`.
void checkPlot(const QImage& image, const QWidget* top, QCustomPlot* plot, const QPalette& palette, bool dark) {
  const QPoint at = plot->mapTo(top, QPoint(0, 0));
  const QColor background = image.pixelColor(at + QPoint(2, 2));
  QCOMPARE(background, palette.color(QPalette::Base));
  QVERIFY(followsPalette(background, dark));
  const QRect axis_rect = plot->axisRect()->rect().translated(at);
  // The x axis line along the bottom of the axis rect.
  const QRect axis_line(axis_rect.center().x() - 3, axis_rect.bottom() - 1, 6, 3);
  QVERIFY2(contrastRatio(mostContrasting(image, axis_line, background), background) >= 3.0, plot->objectName().toLatin1());
  // Tick labels in the left margin.
  const QRect labels(at.x(), axis_rect.top(), axis_rect.left() - at.x() - 4, axis_rect.height());
  QVERIFY(contrastRatio(mostContrasting(image, labels, background), background) >= 4.5);
}

}  // namespace

class ThemeTest : public QObject {
  Q_OBJECT
 private slots:
  void cleanup() { QApplication::setPalette(test::lightPalette()); }

  void paletteHelpers() {
    QVERIFY(!isDarkPalette(test::lightPalette()));
    QVERIFY(isDarkPalette(test::darkPalette()));
    QCOMPARE(qRound(contrastRatio(Qt::black, Qt::white)), 21);
    QCOMPARE(contrastRatio(Qt::red, Qt::red), 1.0);
    QCOMPARE(mixColors(Qt::black, Qt::white, 0.0), QColor(Qt::black));
    QCOMPARE(mixColors(Qt::black, Qt::white, 1.0), QColor(Qt::white));
    QVERIFY(qAbs(mixColors(Qt::black, Qt::white, 0.5).lightness() - 128) <= 1);
    for (bool dark : {false, true}) {
      const QPalette p = paletteFor(dark);
      QVERIFY(contrastRatio(errorTextColor(p), p.color(QPalette::Window)) >= 4.5);
      QVERIFY(contrastRatio(errorTextColor(p), p.color(QPalette::Base)) >= 4.5);
      // A problem label's palette: its text in that red, the rest untouched
      // (the settings dialog's and sampling editor's messages were a fixed
      // #d32f2f, 2.8 to 1 on a dark window).
      const QPalette error = withErrorText(p);
      QCOMPARE(error.color(QPalette::WindowText), errorTextColor(p));
      QCOMPARE(error.color(QPalette::Text), errorTextColor(p));
      QCOMPARE(error.color(QPalette::Window), p.color(QPalette::Window));
    }
  }

  void blockMapFollowsPalette_data() { addThemeRows(); }
  void blockMapFollowsPalette() {
    QFETCH(bool, dark);
    const QPalette palette = paletteFor(dark);
    BlockMapWidget w;
    w.setPalette(palette);
    w.resize(400, 300);
    w.setSnapshot(test::makeSnapshot(3, 3, 1));
    const QImage plain = grabbed(w, dark ? "block_map_dark_plain" : "block_map_light_plain");
    w.setFocusedSequence(101, 0);
    const QImage image = grabbed(w, dark ? "block_map_dark" : "block_map_light");
    const auto body = [&](const QImage& im, int block) {
      const QRect r = w.cellRect(block);
      return im.pixelColor(r.right() - 3, r.bottom() - 3);
    };
    const QColor background = image.pixelColor(1, 1);  // the margin
    QCOMPARE(background, palette.color(QPalette::Base));
    QVERIFY(followsPalette(background, dark));
    // Free and cached-free cells (no focus): on the background's side, but visible on it
    // and told apart from each other.
    const QColor free_cell = body(plain, 40);
    const QColor cached = body(plain, 63);
    QCOMPARE(body(image, 40), free_cell);  // a focus leaves free cells as they are
    QVERIFY2(followsPalette(free_cell, dark) || qAbs(free_cell.lightness() - background.lightness()) < 40,
             qPrintable(free_cell.name()));
    QVERIFY2(qAbs(free_cell.lightness() - background.lightness()) >= 10, qPrintable(free_cell.name()));
    QVERIFY(contrastRatio(cached, background) >= 1.3);
    QVERIFY(cached != free_cell);
    // The focused sequence's numbers contrast with their cells.
    for (int block : {0, 3, 4}) {
      const QRect inner = w.cellRect(block).adjusted(3, 3, -3, -3);
      QVERIFY2(contrastRatio(mostContrasting(image, inner, body(image, block)), body(image, block)) >= 3.0,
               qPrintable(QString::number(block)));
    }
    // A used block's colour stands out from the background; washed out (not
    // focused) it moves towards the background on either theme.
    const auto distance = [&](const QColor& c) { return contrastRatio(c, background); };
    QVERIFY(distance(body(plain, 1)) >= 1.5);
    QVERIFY(distance(body(image, 1)) < distance(body(plain, 1)));
    // The focused outline is the palette's highlight.
    const QRect r3 = w.cellRect(3);
    QCOMPARE(image.pixelColor(r3.left(), r3.center().y()), palette.color(QPalette::Highlight));
  }

  // The cascade mark (amber triangle, bottom-right) stands off the
  // background and carries an edge that contrasts with its own fill, on
  // either theme, and looks unlike the shared mark.
  void cascadeMarkReadsOnBothThemes_data() { addThemeRows(); }
  void cascadeMarkReadsOnBothThemes() {
    QFETCH(bool, dark);
    const QPalette palette = paletteFor(dark);
    BlockMapWidget w;
    w.setPalette(palette);
    w.resize(400, 300);
    w.setSnapshot(test::makeCascadeSnapshot(3, 3, 2));
    const QImage image = grabbed(w, dark ? "block_map_cascade_dark" : "block_map_cascade_light");
    const CellPalette colours = CellPalette::fromPalette(palette);
    const QColor background = palette.color(QPalette::Base);
    const QRect r = w.cellRect(1);
    const QColor fill = image.pixelColor(r.bottomRight() - QPoint(2, 2));
    QCOMPARE(fill, colours.cascade_fill);
    QVERIFY2(contrastRatio(fill, background) >= 2.5, qPrintable(fill.name()));
    QVERIFY(fill != colours.mark_fill);
    // The triangle's right edge.
    const QRect edge(r.right(), r.bottom() - r.width() / 4, 1, 2);
    QVERIFY(contrastRatio(mostContrasting(image, edge, fill), fill) >= 3.0);
  }

  void plotsFollowPalette_data() { addThemeRows(); }
  void plotsFollowPalette() {
    QFETCH(bool, dark);
    const QPalette palette = paletteFor(dark);
    PlotsWidget w;
    w.setPalette(palette);
    w.resize(500, 640);
    feed(w, 60);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCoreApplication::processEvents();  // the queued replots
    const QImage image = grabbed(w, dark ? "plots_dark" : "plots_light");
    // Its own strips; the speculation plots (hidden: speculation is off) below.
    const QList<QCustomPlot*> plots = w.findChildren<QCustomPlot*>(QString(), Qt::FindDirectChildrenOnly);
    QCOMPARE(plots.size(), 5);
    for (QCustomPlot* plot : plots) checkPlot(image, &w, plot, palette, dark);
    // The KV strip's free area (between used + cached and the pool size)
    // takes the background's side too: no light grey slab on a dark theme.
    QCustomPlot* kv = plots[1];
    const QPoint at = kv->mapTo(&w, QPoint(0, 0));
    const QPoint free_area(qRound(kv->xAxis->coordToPixel(30)), qRound(kv->yAxis->coordToPixel(40)));
    const QColor free_pixel = image.pixelColor(at + free_area);
    QVERIFY2(dark ? free_pixel.lightness() < 100 : free_pixel.lightness() > 180, qPrintable(free_pixel.name()));
  }

  void specPlotsFollowPalette_data() { addThemeRows(); }
  void specPlotsFollowPalette() {
    QFETCH(bool, dark);
    const QPalette palette = paletteFor(dark);
    SpecPlots w;
    w.setPalette(palette);
    w.setSpecMethod(SpecMethod::Ngram);
    w.resize(500, 480);
    auto s = std::make_shared<EngineSnapshot>();
    s->step = 2;
    StepStats st;
    st.step = 1;
    st.num_draft_tokens = 4;
    st.num_accepted_tokens = 3;
    s->last_step = st;
    s->spec.num_drafts = 2;
    s->spec.num_judged_at = {2, 2, 1, 1};
    s->spec.num_accepted_at = {2, 1, 1, 0};
    w.addSnapshot(s);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCoreApplication::processEvents();  // the queued replots
    const QImage image = grabbed(w, dark ? "spec_plots_dark" : "spec_plots_light");
    const QList<QCustomPlot*> plots = w.findChildren<QCustomPlot*>();
    QCOMPARE(plots.size(), 3);
    for (QCustomPlot* plot : plots) checkPlot(image, &w, plot, palette, dark);
  }

  void plotsAndBlockMapRestyleWhenTheSystemThemeChanges() {
    QApplication::setPalette(test::lightPalette());
    PlotsWidget plots;
    plots.resize(500, 640);
    feed(plots, 30);
    plots.show();
    BlockMapWidget map;
    map.resize(300, 200);
    map.setSnapshot(test::makeSnapshot(3, 3, 1));
    QVERIFY(QTest::qWaitForWindowExposed(&plots));
    QCoreApplication::processEvents();
    auto* plot = plots.findChildren<QCustomPlot*>().front();
    QVERIFY(followsPalette(grabbed(plots, "plots_before_switch").pixelColor(2, 2), false));
    QVERIFY(followsPalette(grabbed(map, "block_map_before_switch").pixelColor(1, 1), false));

    QApplication::setPalette(test::darkPalette());  // what a theme switch does
    QCoreApplication::processEvents();
    const QImage after = grabbed(plots, "plots_after_switch");
    checkPlot(after, &plots, plot, test::darkPalette(), true);
    QVERIFY(followsPalette(grabbed(map, "block_map_after_switch").pixelColor(1, 1), true));
  }

  void tracePanelFollowsPalette_data() { addThemeRows(); }
  void tracePanelFollowsPalette() {
    QFETCH(bool, dark);
    const QPalette palette = paletteFor(dark);
    TracePanel panel;
    panel.setPalette(palette);
    panel.resize(700, 600);
    using T = EngineEventType;
    panel.appendEvents({{1.000, T::StepBegin, 0, 0, 0, 0},
                        {1.002, T::Admit, 1, 0, 20, 0},
                        {1.010, T::StepEnd, 0, 0, 20, 1},
                        {1.011, T::KvUsage, 0, 0, 5, 0},
                        {1.100, T::StepBegin, 0, 0, 1, 0},
                        {1.110, T::StepEnd, 0, 0, 1, 1},
                        {1.111, T::KvUsage, 0, 0, 6, 0}});
    QVERIFY(!panel.loadTraceFile(QStringLiteral("/nonexistent/kvscope-trace.json")));  // an error message
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QCoreApplication::processEvents();
    const QImage image = grabbed(panel, dark ? "trace_panel_dark" : "trace_panel_light");
    auto* plot = panel.findChild<TracePlot*>(QStringLiteral("tracePlot"));
    QVERIFY(plot);
    checkPlot(image, &panel, plot, palette, dark);
    // The legend sits above the axes, not over the data (it covered the KV
    // areas' peaks).
    QVERIFY(plot->legend->visible());
    QVERIFY2(!plot->legend->outerRect().intersects(plot->axisRect()->rect()),
             qPrintable(QStringLiteral("legend %1,%2 %3x%4")
                            .arg(plot->legend->outerRect().x())
                            .arg(plot->legend->outerRect().y())
                            .arg(plot->legend->outerRect().width())
                            .arg(plot->legend->outerRect().height())));
    // The error message: red, and readable on the window colour.
    auto* message = panel.findChild<QLabel*>(QStringLiteral("traceMessage"));
    QVERIFY(message && message->isVisible());
    const QColor window = palette.color(QPalette::Window);
    const QColor text = mostContrasting(image, areaOf(message, &panel), window);
    QVERIFY2(contrastRatio(text, window) >= 4.5, qPrintable(text.name()));
    QVERIFY(text.red() > text.green() + 60);
  }

  void memoryPanelFollowsPalette_data() { addThemeRows(); }
  void memoryPanelFollowsPalette() {
    QFETCH(bool, dark);
    const QPalette palette = paletteFor(dark);
    MemoryPanel panel;
    panel.setPalette(palette);
    EngineConfig config;
    config.block_size = 16;
    config.kv_budget_bytes = 64ll << 20;
    config.model_path = "SmolLM2-135M-Instruct.Q4_1.gguf";
    panel.setModel(smolInfo(), config);
    panel.setSnapshot(test::makeSnapshot(3, 3, 2));
    panel.findChild<QSpinBox*>(QStringLiteral("outputTokens"))->setValue(600);  // more than max tokens: an error
    QVERIFY2(panel.whatIf().error.find("max tokens") != std::string::npos, panel.whatIf().error.c_str());
    panel.resize(460, 640);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    const QImage image = grabbed(panel, dark ? "memory_panel_dark" : "memory_panel_light");

    auto* bar = panel.findChild<QWidget*>(QStringLiteral("memoryBar"));
    QVERIFY(bar);
    const QRect bar_area = areaOf(bar, &panel);
    QCOMPARE(image.pixelColor(bar_area.left(), bar_area.center().y()), palette.color(QPalette::Mid));  // frame
    // The KV free segment is the block map's free colour for this palette,
    // and a good part of the bar (most of the pool is free).
    const QColor free_colour = CellPalette::fromPalette(palette).free;
    int free_pixels = 0;
    for (int x = bar_area.left(); x <= bar_area.right(); ++x) free_pixels += image.pixelColor(x, bar_area.center().y()) == free_colour;
    QVERIFY2(free_pixels > bar_area.width() / 10, qPrintable(QString::number(free_pixels)));
    QVERIFY(followsPalette(free_colour, dark) || !dark);

    auto* what_if = panel.findChild<QLabel*>(QStringLiteral("whatIfText"));
    QVERIFY(what_if);
    const QColor window = palette.color(QPalette::Window);
    const QColor text = mostContrasting(image, areaOf(what_if, &panel), window);
    QVERIFY2(contrastRatio(text, window) >= 4.5, qPrintable(text.name()));
    QVERIFY(text.red() > text.green() + 60);
  }

  void sharedPrefixPanelFollowsPalette_data() { addThemeRows(); }
  void sharedPrefixPanelFollowsPalette() {
    QFETCH(bool, dark);
    const QPalette palette = paletteFor(dark);
    SharedPrefixPanel panel;
    panel.setPalette(palette);
    panel.setSnapshot(test::makeSnapshot(3, 3, 2));
    panel.resize(420, 260);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    const QImage image = grabbed(panel, dark ? "shared_prefix_dark" : "shared_prefix_light");
    auto* view = panel.findChild<QTableView*>();
    QVERIFY(view);
    const QRect viewport = areaOf(view->viewport(), &panel);
    const QColor empty = image.pixelColor(viewport.center().x(), viewport.bottom() - 4);  // below the rows
    QVERIFY2(followsPalette(empty, dark), qPrintable(empty.name()));
    auto* total = panel.findChild<QLabel*>(QStringLiteral("sharedPrefixTotal"));
    const QColor window = palette.color(QPalette::Window);
    QVERIFY(contrastRatio(mostContrasting(image, areaOf(total, &panel), window), window) >= 4.5);
  }
};

QTEST_MAIN(ThemeTest)
#include "theme_test.moc"
