// RankLanesPlot (see rank_lanes_plot.h).
#include "rank_lanes_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "plot_style.h"

namespace kvscope::ui {

namespace {

constexpr double kLanePenWidth = 10.0;  // pixels: the bars' thickness
constexpr int kLaneHeight = 24;         // pixels per lane in the minimum height

QColor laneColor(int rank) { return QColor::fromHsv((200 + rank * 67) % 360, 150, 200); }

}  // namespace

// Bars are keyed in milliseconds since the trace began (added once, never
// moved); this ticker puts its ticks at whole steps from the shown step's
// begin and labels them with the time since it.
class StepTimeTicker : public QCPAxisTicker {
 public:
  void setOrigin(double origin_ms) { origin_ms_ = origin_ms; }

 protected:
  QVector<double> createTickVector(double tick_step, const QCPRange& range) override {
    QVector<double> ticks;
    if (tick_step <= 0.0) return ticks;
    const double first = std::ceil((range.lower - origin_ms_) / tick_step);
    const double last = std::floor((range.upper - origin_ms_) / tick_step);
    for (double k = first; k <= last && ticks.size() < 100; ++k) ticks.append(origin_ms_ + k * tick_step);
    return ticks;
  }
  QString getTickLabel(double tick, const QLocale& locale, QChar format_char, int precision) override {
    return QCPAxisTicker::getTickLabel(tick - origin_ms_, locale, format_char, precision);
  }

 private:
  double origin_ms_ = 0.0;
};

RankLanesPlot::RankLanesPlot(QWidget* parent) : QCustomPlot(parent) {
  x_ticker_.reset(new StepTimeTicker);
  x_ticker_->setTickCount(5);
  xAxis->setTicker(x_ticker_);
  xAxis->setLabel(tr("ms since the step began"));
  lane_ticker_.reset(new QCPAxisTickerText);
  yAxis->setTicker(lane_ticker_);
  yAxis->setRangeReversed(true);  // rank 0 on top
  yAxis->grid()->setVisible(false);
  yAxis->setSubTicks(false);
  setMinimumHeight(60 + 2 * kLaneHeight);
  applyPaletteToPlot(this, palette());
  showStep(std::nullopt);
}

void RankLanesPlot::changeEvent(QEvent* event) {
  QCustomPlot::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    applyPaletteToPlot(this, palette());
    replot(QCustomPlot::rpQueuedRefresh);  // buffers now, see PlotsWidget::applyPalette
  }
}

bool RankLanesPlot::event(QEvent* event) {
  if (event->type() == QEvent::ScreenChangeInternal) syncPlotPixelRatio(this);  // see plot_style.h
  return QCustomPlot::event(event);
}

void RankLanesPlot::showEvent(QShowEvent* event) {
  QCustomPlot::showEvent(event);
  syncPlotPixelRatio(this);
}

void RankLanesPlot::addLane() {
  const int rank = numLanes();
  QCPGraph* lane = addGraph(xAxis, yAxis);
  lane->setName(tr("rank %1").arg(rank));
  QPen pen(laneColor(rank), kLanePenWidth);
  pen.setCapStyle(Qt::FlatCap);  // a bar ends where the rank's pass ended
  lane->setPen(pen);
  lane->setLineStyle(QCPGraph::lsLine);
  lane->setAdaptiveSampling(false);  // it would merge the NaN gaps between bars
  lanes_.push_back(lane);
  setMinimumHeight(60 + std::max(numLanes(), 2) * kLaneHeight);
}

void RankLanesPlot::setTimeline(const TraceTimeline* timeline) {
  timeline_ = timeline;
  for (QCPGraph* lane : lanes_) removeGraph(lane);
  lanes_.clear();
  num_plotted_spans_ = 0;
  shown_step_.reset();
  appendNewData();
}

void RankLanesPlot::appendNewData() {
  if (!timeline_) return;
  const std::vector<TraceRankSpan>& spans = timeline_->rank_spans();
  const double start = timeline_->start_time();
  const double gap = std::numeric_limits<double>::quiet_NaN();
  for (; num_plotted_spans_ < spans.size(); ++num_plotted_spans_) {
    const TraceRankSpan& s = spans[num_plotted_spans_];
    while (numLanes() <= s.rank) addLane();
    // A bar: a line from the rank's begin to its end, then a gap. A rank's
    // passes follow one another, so the keys stay sorted.
    QCPGraph* lane = lanes_[static_cast<size_t>(s.rank)];
    const double begin_ms = (s.begin_s - start) * 1e3, end_ms = (s.end_s - start) * 1e3;
    lane->addData(begin_ms, s.rank);
    lane->addData(end_ms, s.rank);
    lane->addData(end_ms, gap);
  }
  // The shown step may have gained spans (a live trace): redraw its range.
  showStep(shown_step_);
}

void RankLanesPlot::setCursorTime(double t) {
  showStep(timeline_ ? timeline_->step_at(t) : std::nullopt);
}

void RankLanesPlot::showStep(std::optional<size_t> step) {
  shown_step_ = step;
  const int lanes = std::max(numLanes(), 1);
  yAxis->setRange(-0.6, lanes - 0.4);
  double begin_ms = 0.0, end_ms = 1.0;
  if (timeline_ && step) {
    const double start = timeline_->start_time();
    const TraceStep& s = timeline_->steps()[*step];
    begin_ms = (s.begin_s - start) * 1e3;
    end_ms = (s.end_s - start) * 1e3;
    const auto [first, last] = timeline_->rank_spans_of_step(*step);
    for (size_t i = first; i < last; ++i)  // an open step: as far as its ranks ran
      end_ms = std::max(end_ms, (timeline_->rank_spans()[i].end_s - start) * 1e3);
    xAxis->setLabel(tr("ms since step %1 began").arg(s.step));
  } else {
    xAxis->setLabel(tr("ms since the step began"));
  }
  const double pad = std::max(end_ms - begin_ms, 1e-3) * 0.03;
  x_ticker_->setOrigin(begin_ms);
  xAxis->setRange(begin_ms - pad, std::max(end_ms, begin_ms + 1e-3) + pad);
  updateLabels();
  replot(QCustomPlot::rpQueuedReplot);
}

QString RankLanesPlot::laneLabel(int lane) const {
  double seconds = 0.0;
  bool ran = false;
  if (timeline_ && shown_step_) {
    const auto [first, last] = timeline_->rank_spans_of_step(*shown_step_);
    for (size_t i = first; i < last; ++i) {
      const TraceRankSpan& s = timeline_->rank_spans()[i];
      if (s.rank != lane) continue;
      seconds += s.duration_s();
      ran = true;
    }
  }
  return ran ? tr("rank %1 · %2 ms").arg(lane).arg(seconds * 1e3, 0, 'f', 2) : tr("rank %1").arg(lane);
}

void RankLanesPlot::updateLabels() {
  lane_ticker_->clear();
  for (int lane = 0; lane < numLanes(); ++lane) lane_ticker_->addTick(lane, laneLabel(lane));
}

int RankLanesPlot::numBarsInLane(int lane) const {
  if (lane < 0 || lane >= numLanes()) return 0;
  // Every bar ends with a gap (a NaN value).
  int bars = 0;
  const QSharedPointer<QCPGraphDataContainer> data = lanes_[static_cast<size_t>(lane)]->data();
  for (auto it = data->constBegin(); it != data->constEnd(); ++it) bars += std::isnan(it->value) ? 1 : 0;
  return bars;
}

}  // namespace kvscope::ui
