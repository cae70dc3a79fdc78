// TracePlot: a whole trace at a glance, for the Trace panel. Batch tokens per
// step (left axis) and KV blocks, used and used + cached-free stacked (right
// axis), against seconds since the trace began, with a vertical cursor at the
// replay time. Grows as a live trace is appended to; redraws are coalesced
// with QCustomPlot::rpQueuedReplot. A click asks to move the cursor there.
// Background, axes and legend follow the widget's palette, restyled when it
// changes (plot_style.h).
#pragma once

#include <cstddef>

#include <qcustomplot.h>

#include "models/trace_timeline.h"

namespace kvscope::ui {

class TracePlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit TracePlot(QWidget* parent = nullptr);

  // Draws `timeline` from scratch (not owned; must outlive the plot or be
  // replaced by another setTimeline()).
  void setTimeline(const TraceTimeline* timeline);
  // Adds what the timeline gained since the last call (ended steps, KV samples).
  void appendNewData();
  // Moves the cursor to timeline time t.
  void setCursorTime(double t);

 signals:
  // Timeline time under a mouse click.
  void timeClicked(double t);

 protected:
  void changeEvent(QEvent* event) override;
  bool event(QEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  void rescale();

  const TraceTimeline* timeline_ = nullptr;
  QCPGraph* tokens_ = nullptr;
  QCPGraph* kv_used_ = nullptr;
  QCPGraph* kv_cached_ = nullptr;  // at used + cached-free (stacked)
  QCPItemStraightLine* cursor_ = nullptr;
  size_t num_plotted_steps_ = 0;
  size_t num_plotted_kv_ = 0;
  double max_tokens_ = 1.0;
  double max_blocks_ = 1.0;
};

}  // namespace kvscope::ui
