// SpecPlots (see spec_plots.h).
#include "spec_plots.h"

#include <algorithm>
#include <array>

#include <QEvent>
#include <QLocale>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "plot_replot.h"
#include "plot_style.h"

namespace kvscope::ui {
namespace {

// One colour per proposer, in the order they first ran.
const std::array<QColor, 4> kSeriesColors{QColor(40, 160, 90), QColor(220, 110, 30), QColor(130, 80, 210),
                                          QColor(40, 120, 200)};

// `now` minus `base`, counter by counter (the engine's totals since `base`
// was taken; positions `base` had not seen yet count from zero).
SpecStats since(const SpecStats& now, const SpecStats& base) {
  SpecStats d;
  d.num_drafts = now.num_drafts - base.num_drafts;
  d.num_draft_tokens = now.num_draft_tokens - base.num_draft_tokens;
  d.num_accepted_tokens = now.num_accepted_tokens - base.num_accepted_tokens;
  d.num_pauses = now.num_pauses - base.num_pauses;
  const auto minus = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> out(a);
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) out[i] -= b[i];
    return out;
  };
  d.num_judged_at = minus(now.num_judged_at, base.num_judged_at);
  d.num_accepted_at = minus(now.num_accepted_at, base.num_accepted_at);
  return d;
}

QCPBars* makeBars(QCustomPlot* plot, const QColor& color) {
  auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
  bars->setWidth(0.7);
  bars->setPen(QPen(color.darker(130), 1));
  bars->setBrush(color);
  plot->legend->setVisible(false);  // one series: the title says what it is
  plot->xAxis->setTicker(QSharedPointer<QCPAxisTickerFixed>::create());
  plot->xAxis->ticker().staticCast<QCPAxisTickerFixed>()->setTickStep(1.0);
  return bars;
}

}  // namespace

SpecPlots::SpecPlots(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  acceptance_ = makeStripPlot(this, tr("Draft acceptance %, last %1 verifying steps").arg(kWindowVerifySteps),
                              kWindowSteps);
  acceptance_->yAxis->setRange(0, 130);  // head room for the legend
  lengths_ = makeStripPlot(this, tr("Accepted per verification"), kWindowSteps);
  positions_ = makeStripPlot(this, tr("Acceptance % by draft position"), kWindowSteps);
  lengths_title_ = stripPlotTitle(lengths_);
  positions_title_ = stripPlotTitle(positions_);
  length_bars_ = makeBars(lengths_, QColor(60, 150, 90));
  position_bars_ = makeBars(positions_, QColor(40, 120, 200));
  positions_->xAxis->setLabel(tr("draft position"));
  // One column like the strips above: side by side, two titles would make
  // the dock wider than a laptop's.
  for (QCustomPlot* plot : plots()) layout->addWidget(plot);
  for (QCustomPlot* plot : {lengths_, positions_}) plot->setMinimumHeight(130);
  clear();
  applyPalette();
  hide();  // until a proposer is switched on (setSpecMethod)
}

void SpecPlots::applyPalette() {
  const QPalette pal = palette();
  for (QCustomPlot* plot : plots()) {
    applyPaletteToPlot(plot, pal);
    plot->replot(QCustomPlot::rpQueuedRefresh);
  }
}

void SpecPlots::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) applyPalette();
}

bool SpecPlots::event(QEvent* event) {
  if (event->type() == QEvent::ScreenChangeInternal) {
    for (QCustomPlot* plot : plots()) syncPlotPixelRatio(plot);
  }
  return QWidget::event(event);
}

void SpecPlots::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  for (QCustomPlot* plot : plots()) syncPlotPixelRatio(plot);
}

void SpecPlots::setSpecMethod(kvscope::SpecMethod method) {
  if (last_step_ < 0) {  // nothing has run yet: no step to attribute to the old one
    method_ = method;
    method_pending_ = false;
    if (method != SpecMethod::Off) bars_method_ = method;
  } else if (method != method_ || method_pending_) {
    pending_method_ = method;
    method_pending_ = true;
  }
  if (method != SpecMethod::Off) setVisible(true);
}

void SpecPlots::clear() {
  for (auto& [name, series] : series_) {
    series.graph->data()->clear();
    series.window.clear();
  }
  baseline_ = SpecStats{};
  last_stats_ = SpecStats{};
  last_step_ = -1;
  updateBars(last_stats_);
  acceptance_->xAxis->setRange(0, kWindowSteps);
  acceptance_->replot(QCustomPlot::rpQueuedReplot);
}

SpecPlots::Series& SpecPlots::seriesFor(kvscope::SpecMethod method) {
  const std::string name = spec_method_name(method);
  auto found = series_.find(name);
  if (found != series_.end()) return found->second;
  Series& series = series_[name];
  series.graph = acceptance_->addGraph();
  series.graph->setName(QString::fromStdString(name));
  series.graph->setPen(QPen(kSeriesColors[static_cast<size_t>(series_order_.size()) % kSeriesColors.size()], 1.5));
  // A point per verifying step, held until the next: verifications can be
  // rare (a paused method verifies seldom), and a slope drawn between two of
  // them read as a gradual trend.
  series.graph->setLineStyle(QCPGraph::lsStepLeft);
  series.graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
  series_order_ << QString::fromStdString(name);
  return series;
}

void SpecPlots::addSnapshot(const SnapshotPtr& snapshot) {
  if (!snapshot) return;
  const EngineSnapshot& s = *snapshot;
  const double step = static_cast<double>(s.step);
  if (step < last_step_) clear();  // a new engine counts from zero again
  if (step == last_step_) return;  // an idle re-publish of the same step
  last_step_ = step;

  for (const StepStats& st : s.steps_reported()) {
    if (st.num_draft_tokens <= 0) continue;
    Series& series = seriesFor(method_);
    series.window.emplace_back(st.num_accepted_tokens, st.num_draft_tokens);
    if (series.window.size() > static_cast<size_t>(kWindowVerifySteps)) series.window.erase(series.window.begin());
    double accepted = 0;
    double drafted = 0;
    for (const auto& [a, d] : series.window) {
      accepted += a;
      drafted += d;
    }
    series.graph->addData(static_cast<double>(st.step + 1), 100.0 * accepted / drafted);
  }
  last_stats_ = s.spec;
  if (method_pending_) {
    // This snapshot's steps ran under the old proposer; the next ones do not.
    // The bars start again for a new proposer; turning speculation off keeps
    // the last proposer's bars (nothing more is drafted).
    if (pending_method_ != SpecMethod::Off && pending_method_ != bars_method_) {
      baseline_ = s.spec;
      bars_method_ = pending_method_;
    }
    method_ = pending_method_;
    method_pending_ = false;
  }
  updateBars(last_stats_);

  // The x range grows with the run until it spans the window, then slides.
  const double hi = std::max(step, 50.0);
  const double lo = std::max(0.0, hi - kWindowSteps);
  for (int i = 0; i < acceptance_->graphCount(); ++i) acceptance_->graph(i)->data()->removeBefore(lo - 1);
  acceptance_->xAxis->setRange(lo, hi);
  replotWhenSeen(acceptance_);
}

void SpecPlots::updateBars(const SpecStats& stats) {
  const SpecStats d = since(stats, baseline_);
  const size_t k = d.num_accepted_at.size();
  // Exactly j accepted: accepted at position j - 1 but not at j (see spec_plots.h).
  QVector<double> keys, counts;
  for (size_t j = 0; j <= k; ++j) {
    const int64_t at_least_j = j == 0 ? d.num_drafts : d.num_accepted_at[j - 1];
    const int64_t at_least_next = j < k ? d.num_accepted_at[j] : 0;
    keys << static_cast<double>(j);
    counts << static_cast<double>(at_least_j - at_least_next);
  }
  if (d.num_drafts == 0) {
    keys.clear();
    counts.clear();
  }
  length_bars_->setData(keys, counts, true);
  QVector<double> positions, rates;
  for (size_t i = 0; i < d.num_judged_at.size(); ++i) {
    positions << static_cast<double>(i + 1);
    rates << 100.0 * d.acceptance_at(i);
  }
  position_bars_->setData(positions, rates, true);

  const QString method =
      bars_method_ == SpecMethod::Off ? tr("speculation off") : QString::fromLatin1(spec_method_name(bars_method_));
  // Short titles (the dock is narrow); the counts go under the x axis.
  lengths_title_->setText(tr("Accepted per verification · %1").arg(method));
  lengths_->xAxis->setLabel(d.num_drafts > 0 ? tr("accepted draft tokens (%1 verifications, mean %2)")
                                                   .arg(QLocale().toString(static_cast<qlonglong>(d.num_drafts)))
                                                   .arg(d.mean_accepted_length(), 0, 'f', 2)
                                             : tr("accepted draft tokens (none yet)"));
  positions_title_->setText(tr("Acceptance % by draft position · %1").arg(method));
  const double max_count = counts.isEmpty() ? 1.0 : std::max(1.0, *std::max_element(counts.begin(), counts.end()));
  lengths_->xAxis->setRange(-0.6, std::max<double>(4, static_cast<double>(k)) + 0.6);
  lengths_->yAxis->setRange(0, max_count * 1.15);
  positions_->xAxis->setRange(0.4, std::max<double>(4, static_cast<double>(d.num_judged_at.size())) + 0.6);
  positions_->yAxis->setRange(0, 110);
  replotWhenSeen(lengths_);
  replotWhenSeen(positions_);
}

QStringList SpecPlots::acceptanceSeries() const { return series_order_; }

QVector<QPointF> SpecPlots::acceptancePoints(const QString& method) const {
  QVector<QPointF> out;
  auto found = series_.find(method.toStdString());
  if (found == series_.end()) return out;
  for (const QCPGraphData& p : *found->second.graph->data()) out << QPointF(p.key, p.value);
  return out;
}

QVector<double> SpecPlots::acceptedLengthCounts() const {
  QVector<double> out;
  for (const QCPBarsData& b : *length_bars_->data()) out << b.value;
  return out;
}

QVector<double> SpecPlots::positionAcceptance() const {
  QVector<double> out;
  for (const QCPBarsData& b : *position_bars_->data()) out << b.value;
  return out;
}

QString SpecPlots::histogramTitle() const {
  return lengths_title_->text() + QStringLiteral(" / ") + lengths_->xAxis->label();
}

}  // namespace kvscope::ui
