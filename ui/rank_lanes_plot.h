// RankLanesPlot: tensor parallelism in the Trace panel, one lane per rank.
// Each rank's part of every forward pass (TraceRankSpan, from the log's
// RankForward events) is a bar on that rank's lane; the x axis spans the step
// at the replay cursor, in milliseconds since that step began, so the ranks'
// parts of one pass stand side by side: they start together, and a rank that
// waits in a collective for a slower one shows the wait in its bar (the
// Chrome-trace export has the same as one thread per rank). The lane labels
// give each rank's time in that step. Grows as a live trace is appended to;
// redraws are coalesced with rpQueuedReplot; colours follow the palette.
//   tested by tests/ui/trace_panel_test.cpp
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include <qcustomplot.h>

#include "models/trace_timeline.h"

namespace kvscope::ui {

class StepTimeTicker;

class RankLanesPlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit RankLanesPlot(QWidget* parent = nullptr);

  // Draws `timeline`'s rank spans from scratch (not owned; must outlive the
  // plot or be replaced by another setTimeline()).
  void setTimeline(const TraceTimeline* timeline);
  // Adds the rank spans the timeline gained since the last call.
  void appendNewData();
  // Shows the step at timeline time t (the last one begun by then).
  void setCursorTime(double t);

  // One lane per rank seen in the trace.
  int numLanes() const { return static_cast<int>(lanes_.size()); }
  // The bars drawn on rank `lane`'s lane, over the whole trace.
  int numBarsInLane(int lane) const;
  // The steps() index shown; none before the first step.
  std::optional<size_t> shownStep() const { return shown_step_; }
  // The lane's label ("rank 1 · 3.10 ms").
  QString laneLabel(int lane) const;

 protected:
  void changeEvent(QEvent* event) override;
  bool event(QEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  void addLane();
  void updateLabels();
  void showStep(std::optional<size_t> step);

  const TraceTimeline* timeline_ = nullptr;
  std::vector<QCPGraph*> lanes_;  // [rank]
  size_t num_plotted_spans_ = 0;
  std::optional<size_t> shown_step_;
  QSharedPointer<StepTimeTicker> x_ticker_;
  QSharedPointer<QCPAxisTickerText> lane_ticker_;
};

}  // namespace kvscope::ui
