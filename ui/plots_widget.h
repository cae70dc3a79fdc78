// PlotsWidget: three QCustomPlot strips over the last ~300 engine steps, fed
// from snapshots (one point per snapshot, x = step number):
//   queues - running / waiting / swapped sequences;
//   KV     - used / cached-free / free blocks;
//   tokens - prefill and decode tokens in the step.
// Redraws are coalesced with QCustomPlot::rpQueuedReplot.
#pragma once

#include <array>

#include <QWidget>

#include "engine_types.h"

class QCustomPlot;
class QCPGraph;

namespace kvscope::ui {

class PlotsWidget : public QWidget {
  Q_OBJECT
 public:
  static constexpr double kWindowSteps = 300;

  explicit PlotsWidget(QWidget* parent = nullptr);

  void addSnapshot(const SnapshotPtr& snapshot);
  void clear();

 private:
  QCustomPlot* makePlot(const QString& title);
  QCPGraph* addGraph(QCustomPlot* plot, const QString& name, const QColor& color, bool filled);
  void slide(QCustomPlot* plot, double step, double y_max);

  QCustomPlot* queues_ = nullptr;
  QCustomPlot* kv_ = nullptr;
  QCustomPlot* tokens_ = nullptr;
  std::array<QCPGraph*, 3> queue_graphs_{};
  std::array<QCPGraph*, 3> kv_graphs_{};
  std::array<QCPGraph*, 2> token_graphs_{};
  double last_step_ = -1;
  double max_seqs_seen_ = 1;
  double max_tokens_seen_ = 1;
};

}  // namespace kvscope::ui
