// TraceEventModel: the engine events near a time t of a TraceTimeline, one row
// each: time (ms since the trace began), step, type, request and what happened
// in words ("copy-on-write block 12 -> 40", "preempted (swap)", "finished:
// stop"). The row of the event at t (the last one at or before it) is marked
// with a background and dark text (models/marked_row_colors.h), so a replay
// shows where it stands.
//
// Only a window of rows around t is exposed (rowsBefore + rowsAfter), not the
// whole log: a recording holds hundreds of thousands of Schedule and Allocate
// events, and a replay moves t many times a second.
//
// The timeline is not owned; call refresh() after it grew or changed.
// Checked with QAbstractItemModelTester in tests/ui/trace_event_model_test.cpp.
#pragma once

#include <QAbstractTableModel>

#include "models/trace_timeline.h"

namespace kvscope::ui {

class TraceEventModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Time, Step, Type, Request, Details, NumColumns };
  // Data role giving the row's index in TraceTimeline::events() (qulonglong).
  static constexpr int EventIndexRole = Qt::UserRole + 1;

  explicit TraceEventModel(QObject* parent = nullptr);

  // Shows the events of `timeline` (may be null: no rows) around its start.
  void setTimeline(const TraceTimeline* timeline);
  // Moves the window so that it holds the events around t.
  void setTime(double t);
  double time() const { return time_; }
  // Recomputes the window at the same t after the timeline grew (append);
  // after it was cleared or replaced, call setTimeline() again.
  void refresh();
  void setWindowSize(int rows_before, int rows_after);

  // Row of the event at t (the last at or before it), or -1 when t is before
  // the first event.
  int currentRow() const;
  // Index in TraceTimeline::events() of a row.
  size_t eventIndex(int row) const { return first_ + static_cast<size_t>(row); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // What an event says, in words.
  static QString describe(const EngineEvent& event);
  // "stop", "length", ..., or "unknown (<value>)" for a value the engine
  // never writes.
  static QString finishReasonText(int64_t value);

 private:
  const TraceTimeline* timeline_ = nullptr;
  double time_ = 0.0;
  size_t rows_before_ = 40;
  size_t rows_after_ = 40;
  size_t first_ = 0;  // window [first_, last_) of timeline_->events()
  size_t last_ = 0;
  size_t until_ = 0;  // timeline_->num_events_until(time_)
};

}  // namespace kvscope::ui
