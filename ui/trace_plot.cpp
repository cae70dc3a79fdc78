// TracePlot (see trace_plot.h).
#include "trace_plot.h"

#include <algorithm>

#include "plot_style.h"

namespace kvscope::ui {

namespace {

QCPGraph* addSeries(QCustomPlot* plot, QCPAxis* y, const QString& name, const QColor& color, int fill_alpha) {
  QCPGraph* graph = plot->addGraph(plot->xAxis, y);
  graph->setName(name);
  graph->setPen(QPen(color, fill_alpha > 0 ? 1.0 : 1.5));
  if (fill_alpha > 0) graph->setBrush(QColor(color.red(), color.green(), color.blue(), fill_alpha));
  graph->setLineStyle(QCPGraph::lsStepLeft);
  graph->setAdaptiveSampling(true);
  return graph;
}

}  // namespace

TracePlot::TracePlot(QWidget* parent) : QCustomPlot(parent) {
  setMinimumHeight(160);
  xAxis->setLabel(tr("time (s)"));
  yAxis->setLabel(tr("tokens / step"));
  yAxis2->setVisible(true);
  yAxis2->setLabel(tr("KV blocks"));
  yAxis->ticker()->setTickCount(4);
  yAxis2->ticker()->setTickCount(4);
  legend->setVisible(true);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);  // one row
  legend->setWrap(0);
  // In a row of its own above the axes, at the left: inside them it covered
  // the KV areas' peaks, which is where a trace is read.
  moveLegendToHeaderRow(this, 0, nullptr);
  // KV first, so that the token line is drawn on top of the areas.
  kv_cached_ = addSeries(this, yAxis2, tr("KV used + cached-free"), QColor(150, 180, 220), 110);
  kv_used_ = addSeries(this, yAxis2, tr("KV used"), QColor(60, 150, 90), 130);
  tokens_ = addSeries(this, yAxis, tr("batch tokens"), QColor(150, 90, 200), 0);
  cursor_ = new QCPItemStraightLine(this);
  cursor_->setPen(QPen(QColor(200, 40, 40), 1.5));
  cursor_->setVisible(false);
  applyPaletteToPlot(this, palette());
  connect(this, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
    if (timeline_ && !timeline_->empty())
      emit timeClicked(timeline_->start_time() + xAxis->pixelToCoord(event->position().x()));
  });
}

void TracePlot::changeEvent(QEvent* event) {
  QCustomPlot::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    applyPaletteToPlot(this, palette());
    replot(QCustomPlot::rpQueuedRefresh);  // buffers now, see PlotsWidget::applyPalette
  }
}

bool TracePlot::event(QEvent* event) {
  if (event->type() == QEvent::ScreenChangeInternal) syncPlotPixelRatio(this);  // see plot_style.h
  return QCustomPlot::event(event);
}

void TracePlot::showEvent(QShowEvent* event) {
  QCustomPlot::showEvent(event);
  syncPlotPixelRatio(this);
}

void TracePlot::setTimeline(const TraceTimeline* timeline) {
  timeline_ = timeline;
  for (QCPGraph* g : {kv_cached_, kv_used_, tokens_}) g->data()->clear();
  num_plotted_steps_ = num_plotted_kv_ = 0;
  max_tokens_ = max_blocks_ = 1.0;
  appendNewData();
}

void TracePlot::appendNewData() {
  if (!timeline_) return;
  const double start = timeline_->start_time();
  const auto& steps = timeline_->steps();
  // Only ended steps: their token count is known then. Steps end in order.
  while (num_plotted_steps_ < steps.size() && steps[num_plotted_steps_].ended) {
    const TraceStep& s = steps[num_plotted_steps_++];
    tokens_->addData(s.begin_s - start, static_cast<double>(s.num_tokens));
    max_tokens_ = std::max(max_tokens_, static_cast<double>(s.num_tokens));
  }
  const auto& kv = timeline_->kv_samples();
  for (; num_plotted_kv_ < kv.size(); ++num_plotted_kv_) {
    const TraceKvSample& k = kv[num_plotted_kv_];
    const double used = static_cast<double>(k.num_used_blocks);
    const double stacked = used + static_cast<double>(k.num_cached_free_blocks);
    kv_used_->addData(k.time_s - start, used);
    kv_cached_->addData(k.time_s - start, stacked);
    max_blocks_ = std::max(max_blocks_, stacked);
  }
  rescale();
}

void TracePlot::rescale() {
  const double duration = timeline_ ? timeline_->end_time() - timeline_->start_time() : 0.0;
  xAxis->setRange(0, std::max(duration, 1e-3));
  yAxis->setRange(0, max_tokens_ * 1.05);  // a little room above the highest point
  yAxis2->setRange(0, max_blocks_ * 1.05);
  replot(QCustomPlot::rpQueuedReplot);
}

void TracePlot::setCursorTime(double t) {
  const bool shown = timeline_ && !timeline_->empty();
  const double x = shown ? t - timeline_->start_time() : 0.0;
  cursor_->point1->setCoords(x, 0);
  cursor_->point2->setCoords(x, 1);
  cursor_->setVisible(shown);
  replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace kvscope::ui
