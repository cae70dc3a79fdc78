// TracePanel: the inspector's Trace page. Records the engine's event log while
// Record is on (the worker takes the events from the engine and hands them to
// appendEvents()), saves it as a Chrome trace (kvscope/chrome_trace.h; opens
// in Perfetto), opens a saved trace, and replays either with a time slider and
// Play/Pause at 0.25x..8x:
//   - a plot of batch tokens per step and KV used / cached-free blocks over the
//     whole trace, with a vertical cursor at the slider's time (a click on the
//     plot moves it there);
//   - with tensor parallelism (RankForward events), one lane per rank under
//     it: each rank's part of the forward pass of the step at the slider's
//     time, side by side (RankLanesPlot; hidden for a tp = 1 trace);
//   - a summary at that time: step, requests active, KV usage and cumulative
//     preemptions, cache hits, copy-on-writes, evictions and swaps;
//   - the events around that time (TraceEventModel).
// While recording, the view follows the newest events unless the slider was
// moved away from the end. Opening a file switches to that trace (and stops
// recording); Record after that starts a new live trace.
//
// Integration: worker -> appendEvents(EventBatch) (queued; register the
// metatypes with registerEngineMetaTypes()), recordingChanged(bool) -> worker
// (Engine::set_tracing). Tested by tests/ui/trace_panel_test.cpp.
#pragma once

#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

#include "engine_types.h"
#include "models/trace_timeline.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSlider;
class QTableView;

namespace kvscope::ui {

class RankLanesPlot;
class TraceEventModel;
class TracePlot;

class TracePanel : public QWidget {
  Q_OBJECT
 public:
  explicit TracePanel(QWidget* parent = nullptr);

  bool isRecording() const;
  // True while showing a trace opened from a file (appendEvents() ignores
  // batches then: they belong to the live session the file replaced).
  bool isShowingFile() const { return showing_file_; }
  const TraceTimeline& timeline() const { return timeline_; }
  // The time the slider stands at (timeline time, see TraceTimeline).
  double cursorTime() const { return cursor_time_; }
  // The summary line at the cursor, and the last message shown (error or
  // confirmation; empty when none).
  QString summaryText() const;
  QString messageText() const;

 public slots:
  // Live feed while recording (events oldest first). A batch that arrives
  // after Record was switched off is still added (the worker's last
  // take_events()); batches are ignored while a file is shown.
  void appendEvents(const kvscope::ui::EventBatch& events);
  // Opens a Chrome trace written by kvscope and switches to replaying it.
  // On failure the current trace stays and the message says why.
  bool loadTraceFile(const QString& path);
  // Saves the trace shown (live or opened) as a Chrome trace.
  bool saveTraceFile(const QString& path);
  // Same as toggling the Record button (emits recordingChanged on a change).
  void setRecording(bool on);
  // Forgets the trace shown; recording, if on, continues into an empty trace.
  void clear();
  // Moves the cursor (clamped to the trace); the view stops following the end.
  void setCursorTime(double t);

 signals:
  void recordingChanged(bool on);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void onRecordToggled(bool on);
  void onSliderValueChanged(int value);
  void onPlayToggled(bool on);
  void onPlayTick();
  void chooseSaveFile();
  void chooseOpenFile();

  void showMessage(const QString& text, bool error);
  void updateRange();  // slider range and enabled controls from the timeline
  void updateCursorViews();
  int sliderValueAt(double t) const;
  double timeAtSliderValue(int value) const;

  TraceTimeline timeline_;
  TraceEventModel* events_model_ = nullptr;
  bool showing_file_ = false;
  bool message_is_error_ = false;  // message_ is drawn in errorTextColor()
  bool follow_end_ = true;
  bool setting_slider_ = false;  // valueChanged from our own setValue
  double cursor_time_ = 0.0;
  double slider_units_per_s_ = 1e6;  // see updateRange()

  QPushButton* record_ = nullptr;
  QPushButton* clear_ = nullptr;
  QPushButton* save_ = nullptr;
  QPushButton* open_ = nullptr;
  QLabel* source_ = nullptr;
  QLabel* message_ = nullptr;
  TracePlot* plot_ = nullptr;
  RankLanesPlot* rank_lanes_ = nullptr;
  QPushButton* play_ = nullptr;
  QSlider* slider_ = nullptr;
  QComboBox* speed_ = nullptr;
  QLabel* time_label_ = nullptr;
  QLabel* summary_ = nullptr;
  QTableView* table_ = nullptr;

  QTimer play_timer_;
  QElapsedTimer play_clock_;
};

}  // namespace kvscope::ui
