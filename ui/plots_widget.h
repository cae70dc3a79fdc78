// PlotsWidget: four QCustomPlot strips over the last ~300 engine steps, fed
// from snapshots (one point per snapshot, x = step number):
//   queues     - running / waiting / swapped sequences;
//   KV         - used / cached-free / free blocks, and on the right axis the
//                KV waste (reserved but unwritten slots, %);
//   tokens     - prefill and decode tokens in the step;
//   throughput - tokens per second of the step (its batch tokens / its time)
//                and, on the right axis, milliseconds per step;
//   attention  - milliseconds of attention kernels per step, as dots in two
//                colours: steps where cascade attention ran (amber, the block
//                map's cascade mark) and steps that attended flat, so turning
//                cascade on or off mid-run shows its effect at once.
// Under them, SpecPlots (spec_plots.h): speculative decoding, shown while a
// proposer is on or has data.
// Redraws are coalesced with QCustomPlot::rpQueuedReplot; points older than
// the window are dropped, so memory stays bounded however long it runs.
// Backgrounds, axes, grids and legends follow the widget's palette (restyled
// on a palette change, e.g. the system switching to a dark theme); the free
// and cached-free areas use the block map's colours for the same palette.
#pragma once

#include <array>

#include <QSharedPointer>
#include <QWidget>

#include "engine_types.h"

class QCustomPlot;
class QCPAxis;
class QCPAxisTicker;
class QCPGraph;

namespace kvscope::ui {

class SpecPlots;

class PlotsWidget : public QWidget {
  Q_OBJECT
 public:
  static constexpr double kWindowSteps = 300;

  explicit PlotsWidget(QWidget* parent = nullptr);

  void addSnapshot(const SnapshotPtr& snapshot);
  void clear();
  SpecPlots* specPlots() const { return spec_; }

  // For tests: points held by every graph together (bounded by the window).
  int numPoints() const;
  // For tests: points of the attention strip's cascade or flat steps.
  int numAttentionPoints(bool cascade) const;

 protected:
  void changeEvent(QEvent* event) override;
  bool event(QEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  static constexpr int kNumPlots = 5;
  std::array<QCustomPlot*, kNumPlots> plots() const { return {queues_, kv_, tokens_, throughput_, attention_}; }
  // Colours every strip from palette() and replots.
  void applyPalette();
  QCustomPlot* makePlot(const QString& title);
  // value_axis: the plot's left axis unless given (e.g. its yAxis2).
  QCPGraph* addGraph(QCustomPlot* plot, const QString& name, const QColor& color, bool filled,
                     QCPAxis* value_axis = nullptr);
  // y2_max > 0: also scale the right axis.
  void slide(QCustomPlot* plot, double step, double y_max, double y2_max = 0);

  QCustomPlot* queues_ = nullptr;
  QCustomPlot* kv_ = nullptr;
  QCustomPlot* tokens_ = nullptr;
  QCustomPlot* throughput_ = nullptr;
  std::array<QCPGraph*, 3> queue_graphs_{};
  std::array<QCPGraph*, 3> kv_graphs_{};
  QCPGraph* waste_graph_ = nullptr;  // right axis, %
  std::array<QCPGraph*, 3> token_graphs_{};  // prefill + draft + decode, draft + decode, decode
  QCPGraph* tokens_per_s_graph_ = nullptr;
  QCPGraph* ms_per_step_graph_ = nullptr;  // right axis
  QCustomPlot* attention_ = nullptr;
  QCPGraph* flat_attention_graph_ = nullptr;     // ms, steps without a cascade pass
  QCPGraph* cascade_attention_graph_ = nullptr;  // ms, steps with one
  QSharedPointer<QCPAxisTicker> attention_log_ticker_;     // a range of a decade or more
  QSharedPointer<QCPAxisTicker> attention_linear_ticker_;  // less
  SpecPlots* spec_ = nullptr;
  double last_step_ = -1;
  double max_seqs_seen_ = 1;
};

}  // namespace kvscope::ui
