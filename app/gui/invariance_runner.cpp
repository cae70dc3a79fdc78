// InvarianceRunner (see invariance_runner.h).
#include "invariance_runner.h"

#include <QMetaObject>

namespace kvscope::gui {

InvarianceRunner::InvarianceRunner(QObject* parent) : QObject(parent) { ui::registerInvarianceMetaTypes(); }

InvarianceRunner::~InvarianceRunner() {
  for (auto& [id, job] : jobs_) job.cancelled->store(true);
  // Each stops at its next engine step; what they post back is dropped with
  // this object.
  for (auto& [id, job] : jobs_) job.thread->wait();
}

void InvarianceRunner::run(quint64 job_id, const ui::InvarianceJob& job) {
  for (auto& [id, running] : jobs_) running.cancelled->store(true);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  // The thread reports through queued calls on this object; `this` outlives
  // it (the destructor joins), and a call posted to a deleted object is dropped.
  std::unique_ptr<QThread> thread(QThread::create([this, job_id, job, cancelled] {
    int32_t last_done = -1;
    auto report_progress = [this, job_id, cancelled, &last_done](int32_t done, int32_t total) {
      // Called between engine steps, often: only a new count crosses threads.
      if (done != last_done) {
        last_done = done;
        QMetaObject::invokeMethod(
            this, [this, job_id, done, total] { emit this->progress(job_id, done, total); }, Qt::QueuedConnection);
      }
      return !cancelled->load();
    };
    ui::InvarianceOutcome outcome;
    Result<InvarianceReport> report = check_invariance(job.a, job.b, job.prompts, job.options, report_progress);
    if (report.ok()) {
      outcome.report = std::move(report).value();
    } else {
      outcome.error = report.error();
    }
    QMetaObject::invokeMethod(
        this, [this, job_id, outcome = std::move(outcome)] { onThreadDone(job_id, outcome); }, Qt::QueuedConnection);
  }));
  thread->setObjectName(QStringLiteral("invariance-%1").arg(job_id));
  QThread* started = thread.get();
  jobs_[job_id] = Running{std::move(thread), std::move(cancelled)};
  started->start(QThread::LowPriority);  // the chat's engine keeps its turn
}

void InvarianceRunner::cancel(quint64 job_id) {
  const auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second.cancelled->store(true);
}

void InvarianceRunner::onThreadDone(quint64 job_id, const ui::InvarianceOutcome& outcome) {
  const auto it = jobs_.find(job_id);
  if (it != jobs_.end()) {
    it->second.thread->wait();  // its function has returned; the thread ends now
    jobs_.erase(it);
  }
  emit finished(job_id, outcome);
}

}  // namespace kvscope::gui
