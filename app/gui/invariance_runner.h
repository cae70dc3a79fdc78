// InvarianceRunner: runs the Invariance panel's checks (kvscope::check_invariance,
// which creates an engine per side and steps it to the end: seconds to
// minutes) on a thread of their own, never the GUI thread nor the engine
// worker's. Lives in the GUI thread; run() starts a job, progress() and
// finished() come back queued with the job's id beside them. One check at a
// time: a new run cancels the one before (both engines at once would double
// the memory and share the cores). cancel() stops a job at its next engine
// step (the checker's progress callback answers false), and it then finishes
// with the error "cancelled". The destructor cancels and joins whatever runs.
// Tested by tests/ui/invariance_runner_test.cpp on a random tiny model.
#pragma once

#include <atomic>
#include <map>
#include <memory>

#include <QObject>
#include <QThread>

#include "models/invariance_job.h"

namespace kvscope::gui {

class InvarianceRunner : public QObject {
  Q_OBJECT
 public:
  explicit InvarianceRunner(QObject* parent = nullptr);
  ~InvarianceRunner() override;

  // Jobs started and not yet finished (cancelled ones until their thread ends).
  int numRunning() const { return static_cast<int>(jobs_.size()); }

 public slots:
  void run(quint64 job_id, const kvscope::ui::InvarianceJob& job);
  void cancel(quint64 job_id);

 signals:
  // Runs done of total (2 per prompt: one under A, one under B).
  void progress(quint64 job_id, int done, int total);
  void finished(quint64 job_id, const kvscope::ui::InvarianceOutcome& outcome);

 private:
  struct Running {
    std::unique_ptr<QThread> thread;
    std::shared_ptr<std::atomic<bool>> cancelled;
  };
  void onThreadDone(quint64 job_id, const kvscope::ui::InvarianceOutcome& outcome);

  std::map<quint64, Running> jobs_;
};

}  // namespace kvscope::gui
