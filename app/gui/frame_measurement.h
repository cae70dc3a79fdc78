// `kvscope --measure-frames SECONDS`: the GUI thread's frame gaps
// (ui::FrameTimeProbe) while the model loads, then while the engine serves
// what --prompt / --workload started, as one JSON line (measured()), which
// the app prints before it quits.
//
// The running window ends when the worker goes idle (everything served) or
// after SECONDS, whichever comes first, so its percentiles describe a busy
// engine, not the quiet seconds after a short workload. The line says which
// ended it, how long it lasted, and the engine steps and decode tokens in it
// (from the snapshots' per-step records), which tell a fast engine's load on
// the window from a slow one's: on a GPU the same 64 requests stream ten times
// the tokens.
#pragma once

#include <cstdint>

#include <QElapsedTimer>
#include <QObject>

#include "engine_worker.h"
#include "models/frame_time_probe.h"

namespace kvscope::gui {

class FrameMeasurement : public QObject {
  Q_OBJECT
 public:
  // Starts probing now (the loading window); `workload` is only echoed.
  FrameMeasurement(EngineWorker* worker, int seconds, int workload, QObject* parent = nullptr);

 signals:
  // Once, when the running window ends:
  // {"loading":{..},"running":{..},"seconds":S,"workload":N,"ended_by":"idle"|"timeout",
  //  "running_s":..,"finished_requests":..,"engine_steps":..,"decode_tokens":..,"decode_tok_s":..,
  //  "errors":E,"first_error":"..."|null}: errors the worker reported in the window (a refused
  //  workload request, say), which otherwise only a dialog shows.
  void measured(const QString& json);

 private:
  void onModelLoaded();
  void finish(const char* ended_by);

  ui::FrameTimeProbe probe_;
  ui::FrameTimeStats loading_;
  QElapsedTimer running_clock_;
  int seconds_;
  int workload_;
  bool running_ = false;
  bool served_any_ = false;  // a step ran: an idle after this is the end of the work
  bool done_ = false;
  uint64_t last_step_ = 0;  // the newest step counted
  long long steps_ = 0;
  long long decode_tokens_ = 0;
  int finished_requests_ = 0;
  int errors_ = 0;
  QString first_error_;
};

}  // namespace kvscope::gui
