// PlotsWidget (see plots_widget.h).
#include "plots_widget.h"

#include <algorithm>

#include <QCoreApplication>
#include <QEvent>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "block_cell_style.h"
#include "plot_replot.h"
#include "plot_style.h"
#include "spec_plots.h"

namespace kvscope::ui {

PlotsWidget::PlotsWidget(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  queues_ = makePlot(tr("Sequences"));
  kv_ = makePlot(tr("KV blocks"));
  tokens_ = makePlot(tr("Tokens / step"));
  throughput_ = makePlot(tr("Throughput"));
  attention_ = makePlot(tr("Attention / step (log scale)"));
  for (QCustomPlot* plot : {queues_, kv_, tokens_}) useCountTicks(plot->yAxis);
  for (QCustomPlot* plot : plots()) layout->addWidget(plot);
  spec_ = new SpecPlots(this);
  layout->addWidget(spec_);

  queue_graphs_ = {addGraph(queues_, tr("running"), QColor(40, 120, 200), false),
                   addGraph(queues_, tr("waiting"), QColor(230, 140, 30), false),
                   addGraph(queues_, tr("swapped"), QColor(200, 50, 50), false)};
  // Stacked areas: free drawn on top of used + cached, cached on top of used.
  kv_graphs_ = {addGraph(kv_, tr("free"), QColor(200, 200, 200), true),
                addGraph(kv_, tr("cached"), QColor(150, 180, 220), true),
                addGraph(kv_, tr("used"), QColor(60, 150, 90), true)};
  // Stacked: a step's rows are prefill + decode + draft (StepStats); each
  // graph is drawn to the top of its layer, the bottom one last.
  token_graphs_ = {addGraph(tokens_, tr("prefill"), QColor(150, 90, 200), true),
                   addGraph(tokens_, tr("draft"), QColor(220, 170, 40), true),
                   addGraph(tokens_, tr("decode"), QColor(40, 160, 160), true)};
  for (QCPGraph* graph : token_graphs_) graph->setLineStyle(QCPGraph::lsStepLeft);

  // Percent and milliseconds on their own right axes: their scales have
  // nothing to do with block counts or tokens per second.
  for (QCustomPlot* plot : {kv_, throughput_}) {
    plot->yAxis2->setVisible(true);
    plot->yAxis2->ticker()->setTickCount(2);
  }
  kv_->yAxis2->setRange(0, 100 * 1.3);
  // A strip with two axes says in its legend which axis a series reads on.
  waste_graph_ = addGraph(kv_, tr("waste % (right)"), QColor(200, 60, 60), false, kv_->yAxis2);
  tokens_per_s_graph_ = addGraph(throughput_, tr("tokens/s (left)"), QColor(40, 120, 200), true);
  ms_per_step_graph_ = addGraph(throughput_, tr("ms/step (right)"), QColor(230, 140, 30), false, throughput_->yAxis2);
  // Dots, not lines: the two kinds of step interleave when cascade runs on
  // some steps only (auto), and a line would bridge the other kind's steps.
  flat_attention_graph_ = addGraph(attention_, tr("flat ms"), QColor(40, 120, 200), false);
  cascade_attention_graph_ = addGraph(attention_, tr("cascade ms"), CellPalette{}.cascade_fill, false);
  for (QCPGraph* graph : {flat_attention_graph_, cascade_attention_graph_}) {
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
    graph->setAdaptiveSampling(false);  // keeps every dot of a short window
  }
  // Logarithmic: a prefill step's attention (quadratic in its chunk) can take
  // 20x a decode step's, which on a linear axis would flatten the decode
  // steps, and with them the cascade-on / cascade-off difference, to a line.
  attention_->yAxis->setScaleType(QCPAxis::stLogarithmic);
  attention_log_ticker_ = QSharedPointer<QCPAxisTickerLog>::create();
  attention_log_ticker_->setTickCount(2);
  attention_linear_ticker_ = QSharedPointer<QCPAxisTicker>::create();
  attention_linear_ticker_->setTickCount(2);
  attention_->yAxis->setTicker(attention_log_ticker_);
  attention_->yAxis->setRange(0.1, 10);
  applyPalette();
}

void PlotsWidget::applyPalette() {
  const QPalette pal = palette();
  for (QCustomPlot* plot : plots()) applyPaletteToPlot(plot, pal);
  // Free and cached-free blocks look as they do in the block map; a fixed
  // light grey "free" area would glare on a dark theme.
  const CellPalette cells = CellPalette::fromPalette(pal);
  const auto recolour = [](QCPGraph* graph, const QColor& color) {
    QPen pen = graph->pen();
    pen.setColor(color);
    graph->setPen(pen);
    graph->setBrush(QColor(color.red(), color.green(), color.blue(), 150));
  };
  recolour(kv_graphs_[0], cells.free);
  recolour(kv_graphs_[1], cells.cached_free);
  // Cascade steps in the block map's cascade amber for this palette.
  QPen cascade_pen = cascade_attention_graph_->pen();
  cascade_pen.setColor(cells.cascade_fill);
  cascade_attention_graph_->setPen(cascade_pen);
  // The buffers are redrawn now, only the repaint is queued: a palette
  // change can arrive while the window is being painted or grabbed, after
  // which a queued replot would come too late.
  for (QCustomPlot* plot : plots()) plot->replot(QCustomPlot::rpQueuedRefresh);
}

void PlotsWidget::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) applyPalette();
}

bool PlotsWidget::event(QEvent* event) {
  // Sent down to every widget when the window changes screen (and so maybe
  // its device pixel ratio).
  if (event->type() == QEvent::ScreenChangeInternal) {
    for (QCustomPlot* plot : plots()) syncPlotPixelRatio(plot);
    // Qt sends it to every widget of a window that changes screen, but a
    // hidden one may miss it: the speculation plots follow with the strips.
    QCoreApplication::sendEvent(spec_, event);
  }
  return QWidget::event(event);
}

void PlotsWidget::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  for (QCustomPlot* plot : plots()) syncPlotPixelRatio(plot);
}

QCustomPlot* PlotsWidget::makePlot(const QString& title) { return makeStripPlot(this, title, kWindowSteps); }

QCPGraph* PlotsWidget::addGraph(QCustomPlot* plot, const QString& name, const QColor& color, bool filled,
                                QCPAxis* value_axis) {
  QCPGraph* graph = plot->addGraph(plot->xAxis, value_axis ? value_axis : plot->yAxis);
  graph->setName(name);
  graph->setPen(QPen(color, 1.5));
  if (filled) graph->setBrush(QColor(color.red(), color.green(), color.blue(), 150));
  // The fill's edge lies under the graph's own (antialiased) line, so an
  // antialiased fill changes nothing one sees and costs a tenth of a replot
  // (tests/ui/bench/window_snapshot_bench.cpp).
  graph->setAntialiasedFill(false);
  graph->setAdaptiveSampling(true);
  return graph;
}

void PlotsWidget::clear() {
  spec_->clear();
  for (QCustomPlot* plot : plots()) {
    for (int i = 0; i < plot->graphCount(); ++i) plot->graph(i)->data()->clear();
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
  last_step_ = -1;
  max_seqs_seen_ = 1;
}

int PlotsWidget::numPoints() const {
  int n = 0;
  for (QCustomPlot* plot : plots()) {
    for (int i = 0; i < plot->graphCount(); ++i) n += plot->graph(i)->data()->size();
  }
  return n;
}

int PlotsWidget::numAttentionPoints(bool cascade) const {
  return (cascade ? cascade_attention_graph_ : flat_attention_graph_)->data()->size();
}

namespace {

// The largest value a graph holds (after the window's trim), at least `floor`.
double windowMax(QCPGraph* graph, double floor) {
  bool found = false;
  const QCPRange range = graph->getValueRange(found);
  return found ? std::max(range.upper, floor) : floor;
}

// The smallest value a graph holds (after the window's trim), or `none`.
double windowMin(QCPGraph* graph, double none) {
  bool found = false;
  const QCPRange range = graph->getValueRange(found);
  return found ? range.lower : none;
}

}  // namespace

void PlotsWidget::slide(QCustomPlot* plot, double step, double y_max, double y2_max) {
  // The x range grows with the run until it spans the window, then slides.
  const double hi = std::max(step, 50.0);
  const double lo = std::max(0.0, hi - kWindowSteps);
  for (int i = 0; i < plot->graphCount(); ++i) plot->graph(i)->data()->removeBefore(lo - 1);
  plot->xAxis->setRange(lo, hi);
  // A little head room, so the highest point does not run along the frame
  // (the legend sits above the axes, makeStripPlot).
  plot->yAxis->setRange(0, y_max * 1.1);
  if (y2_max > 0) plot->yAxis2->setRange(0, y2_max * 1.1);
  replotWhenSeen(plot);
}

void PlotsWidget::addSnapshot(const SnapshotPtr& snapshot) {
  if (!snapshot) return;
  const EngineSnapshot& s = *snapshot;
  const double step = static_cast<double>(s.step);
  if (step < last_step_) clear();
  spec_->addSnapshot(snapshot);  // a new engine counts from zero again
  if (step == last_step_) return;  // an idle re-publish of the same step
  last_step_ = step;

  queue_graphs_[0]->addData(step, s.num_running);
  queue_graphs_[1]->addData(step, s.num_waiting);
  queue_graphs_[2]->addData(step, s.num_swapped);
  max_seqs_seen_ = std::max({max_seqs_seen_, double(s.num_running), double(s.num_waiting), double(s.num_swapped)});

  const double used = s.kv.num_used_blocks;
  const double cached = s.kv.num_cached_free_blocks;
  kv_graphs_[2]->addData(step, used);
  kv_graphs_[1]->addData(step, used + cached);
  kv_graphs_[0]->addData(step, s.kv.num_blocks);

  waste_graph_->addData(step, s.kv.waste_percent());

  // Batches and rates per step, every step since the last snapshot (at
  // 20 Hz a snapshot covers several decode steps; showing only its last one
  // would stretch that batch over the others). x = steps done after it.
  for (const StepStats& st : s.steps_reported()) {
    const double x = static_cast<double>(st.step + 1);
    const double prefill = st.num_prefill_tokens;
    const double decode = st.num_decode_tokens;
    const double draft = st.num_draft_tokens;
    token_graphs_[0]->addData(x, prefill + decode + draft);
    token_graphs_[1]->addData(x, decode + draft);
    token_graphs_[2]->addData(x, decode);
    // A step that took no measurable time has no rate; its point is left out
    // (the line bridges it) rather than drawn as infinity. The rate counts
    // tokens done: prompt tokens computed and tokens generated (a verifying
    // sequence's accepted drafts too; its rejected ones are not).
    if (st.step_time_s > 0) {
      tokens_per_s_graph_->addData(x, (prefill + decode + st.num_accepted_tokens) / st.step_time_s);
      ms_per_step_graph_->addData(x, st.step_time_s * 1000.0);
    }
    if (st.attention_time_s > 0) {
      (st.num_cascade_groups > 0 ? cascade_attention_graph_ : flat_attention_graph_)
          ->addData(x, st.attention_time_s * 1000.0);
    }
  }

  slide(queues_, step, max_seqs_seen_);
  slide(kv_, step, std::max(1, s.kv.num_blocks));
  // Scaled to what the window holds: to the largest step ever, a prefill
  // of 500 tokens long gone left a batch of 10 decode tokens on the floor.
  slide(tokens_, step, windowMax(token_graphs_[0], 1));
  // Rates swing (a prefill step moves far more tokens than a decode step), so
  // this strip scales to what its window holds now, not the largest ever.
  slide(throughput_, step, windowMax(tokens_per_s_graph_, 1), windowMax(ms_per_step_graph_, 1));
  // The attention strip spans what its window holds (after the slide's
  // trim), log-scaled, with a little head room above.
  slide(attention_, step, 1);
  const double attention_max = std::max(windowMax(flat_attention_graph_, 0.1), windowMax(cascade_attention_graph_, 0.1));
  const double attention_min =
      std::min(windowMin(flat_attention_graph_, attention_max), windowMin(cascade_attention_graph_, attention_max));
  const QCPRange range(std::max(attention_min / 2.0, 1e-3), attention_max * 1.5);
  attention_->yAxis->setRange(range);
  // A log ticker labels only powers of ten: over less than a decade it
  // showed one label or none. Plain steps there, on the same log scale.
  attention_->yAxis->setTicker(range.upper / range.lower >= 10 ? attention_log_ticker_ : attention_linear_ticker_);
}

}  // namespace kvscope::ui
