// Palette and pixel-ratio upkeep for QCustomPlots (see plot_style.h).
#include "plot_style.h"

#include <cmath>

#include <qcustomplot.h>

#include "palette_colors.h"

namespace kvscope::ui {

namespace {

// The pen with another colour, keeping its width, style and cap.
QPen recoloured(QPen pen, const QColor& color) {
  pen.setColor(color);
  return pen;
}

void styleAxis(QCPAxis* axis, const QColor& line, const QColor& text, const QColor& grid, const QColor& sub_grid) {
  axis->setBasePen(recoloured(axis->basePen(), line));
  axis->setTickPen(recoloured(axis->tickPen(), line));
  axis->setSubTickPen(recoloured(axis->subTickPen(), line));
  axis->setTickLabelColor(text);
  axis->setLabelColor(text);
  axis->grid()->setPen(recoloured(axis->grid()->pen(), grid));
  axis->grid()->setSubGridPen(recoloured(axis->grid()->subGridPen(), sub_grid));
  axis->grid()->setZeroLinePen(recoloured(axis->grid()->zeroLinePen(), grid));
}

}  // namespace

void applyPaletteToPlot(QCustomPlot* plot, const QPalette& palette) {
  const QColor base = palette.color(QPalette::Base);
  const QColor text = palette.color(QPalette::Text);
  const bool dark = isDarkPalette(palette);
  // Axis lines a little softer than the text; grid lines faint but visible
  // (QCustomPlot's light grey would glare on a dark background).
  const QColor line = mixColors(base, text, 0.7);
  const QColor grid = mixColors(base, text, dark ? 0.22 : 0.2);
  const QColor sub_grid = mixColors(base, text, 0.1);
  plot->setBackground(base);
  for (QCPAxisRect* rect : plot->axisRects()) {
    for (QCPAxis* axis : rect->axes()) styleAxis(axis, line, text, grid, sub_grid);
  }
  if (QCPLegend* legend = plot->legend) {
    QColor box = base;
    box.setAlpha(200);  // the data shows faintly through, as before
    legend->setBrush(box);
    legend->setBorderPen(recoloured(legend->borderPen(), mixColors(base, text, 0.5)));
    legend->setTextColor(text);
    // setTextColor only reaches items made later; recolour the existing ones.
    for (int i = 0; i < legend->itemCount(); ++i) {
      if (QCPAbstractLegendItem* item = legend->item(i)) item->setTextColor(text);
    }
  }
  // Titles at any depth: a strip's sits in its header row beside the legend.
  for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
    if (auto* title = qobject_cast<QCPTextElement*>(element)) title->setTextColor(text);
  }
}

QCPTextElement* stripPlotTitle(QCustomPlot* plot) {
  for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
    if (auto* title = qobject_cast<QCPTextElement*>(element)) return title;
  }
  return nullptr;
}

bool syncPlotPixelRatio(QCustomPlot* plot) {
  const double ratio = plot->devicePixelRatioF();
  if (std::abs(plot->bufferDevicePixelRatio() - ratio) < 1e-6) return false;
  plot->setBufferDevicePixelRatio(ratio);
  plot->replot(QCustomPlot::rpQueuedReplot);
  return true;
}

QCPLayoutGrid* moveLegendToHeaderRow(QCustomPlot* plot, int legend_column, QCPLayoutElement* beside) {
  plot->plotLayout()->insertRow(0);
  auto* header = new QCPLayoutGrid;
  plot->plotLayout()->addElement(0, 0, header);
  plot->axisRect()->insetLayout()->take(plot->legend);
  const int other = 1 - legend_column;
  header->addElement(0, legend_column, plot->legend);
  header->addElement(0, other, beside ? beside : new QCPLayoutElement(plot));
  header->setColumnStretchFactor(legend_column, 0.01);  // the legend as wide as its items
  header->setColumnStretchFactor(other, 1.0);
  // A taller plot gives its height to the axes, not to the header row: at
  // equal stretch the row took half of it, and the legend's box grew with it.
  plot->plotLayout()->setRowStretchFactor(0, 0.001);
  return header;
}

QCustomPlot* makeStripPlot(QWidget* parent, const QString& title, double window_steps) {
  auto* plot = new QCustomPlot(parent);
  const QFont font = parent->font();
  plot->setMinimumHeight(110);
  plot->setNoAntialiasingOnDrag(true);
  plot->setPlottingHint(QCP::phFastPolylines, true);
  // The title row holds the title and, at its right, the legend: outside the
  // axis rect, so the legend never covers the data (inside, on a strip this
  // short, it hid the top third of every line that ran high).
  auto* text = new QCPTextElement(plot, title, QFont(font.family(), font.pointSize(), QFont::Bold));
  // A text element caps its row at its own height, and the legend is a
  // little taller: a bound of its own (below QWIDGETSIZE_MAX, which means
  // none and would bring the cap back) lets the row grow to the legend.
  text->setMaximumSize(100000, 100000);
  moveLegendToHeaderRow(plot, 1, text);  // the title centred in what the legend leaves
  plot->legend->setVisible(true);
  QFont legend_font = font;
  legend_font.setPointSizeF(legend_font.pointSizeF() * 0.85);
  plot->legend->setFont(legend_font);
  plot->legend->setRowSpacing(-3);
  plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);  // one row
  plot->legend->setWrap(0);
  plot->legend->setColumnSpacing(6);
  plot->xAxis->setRange(0, window_steps);
  plot->yAxis->setRange(0, 1);
  plot->yAxis->ticker()->setTickCount(2);  // short strips (about 40 px): two or three labels that do not collide
  plot->xAxis->setLabel(QString());
  const QFontMetrics metrics(plot->yAxis->tickLabelFont());
  plot->axisRect()->setAutoMargins(QCP::msTop | QCP::msBottom);
  plot->axisRect()->setMargins(QMargins(metrics.horizontalAdvance(QStringLiteral("000000")) + 12, 0,
                                        metrics.horizontalAdvance(QStringLiteral("0000")) + 12, 0));
  return plot;
}

void useCountTicks(QCPAxis* axis) {
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
  ticker->setTickStep(1.0);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // whole steps that grow with the range
  ticker->setTickCount(2);
  axis->setTicker(ticker);
}

}  // namespace kvscope::ui
