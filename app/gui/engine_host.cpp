// EngineHost: the worker thread's lifetime (see engine_host.h).
#include "engine_host.h"

#include <QMetaObject>

#include "kvscope/setting_table.h"

#ifdef __linux__
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace kvscope::gui {
namespace {

constexpr int kEngineNiceIncrement = 5;

void lowerCurrentThreadPriority() {
#ifdef __linux__
  // setpriority(PRIO_PROCESS, tid) sets one thread's nice value on Linux.
  const id_t tid = static_cast<id_t>(gettid());
  const int current = getpriority(PRIO_PROCESS, tid);
  if (setpriority(PRIO_PROCESS, tid, current + kEngineNiceIncrement) != 0)
    qWarning("kvscope: could not lower the engine thread's priority");
#endif
}

}  // namespace

EngineHost::EngineHost(QObject* parent)
    : QObject(parent), worker_(new EngineWorker), server_(new ServerController(worker_, this)) {
  thread_.setObjectName(QStringLiteral("kvscope-engine"));
  worker_->moveToThread(&thread_);
  thread_.start();
  // The engine thread, and the kernel threads the engine starts from it
  // (Linux threads inherit their creator's nice value), run one nice step
  // below the GUI: on a machine whose cores the engine fills, the scheduler
  // then lets the window's thread in first instead of making it wait a time
  // slice. The engine loses nothing while the window is idle.
  QMetaObject::invokeMethod(worker_, [] { lowerCurrentThreadPriority(); }, Qt::QueuedConnection);
}

EngineHost::~EngineHost() { shutdown(); }

void EngineHost::shutdown() {
  if (!worker_) return;
  server_->shutdown();     // its connection threads reach the engine: stopped first
  worker_->requestStop();  // the step loop returns at its next turn
  thread_.quit();
  thread_.wait();
  // The thread is gone: nothing else touches the worker, so the engine can be
  // destroyed here.
  delete worker_;
  worker_ = nullptr;
}

void EngineHost::loadModel(const kvscope::EngineConfig& config) {
  if (!worker_) return;
  // Settings the engine there takes in place keep the server serving (its
  // requests are re-queued with the chat's); a load replaces the engine, so
  // the server lets go of it first. The worker is told which was decided.
  const bool in_place = loads_in_flight_ == 0 && engine_config_ && !kvscope::needs_reload(*engine_config_, config);
  ++loads_in_flight_;
  if (!in_place) server_->beforeEngineLoad();
  QMetaObject::invokeMethod(
      worker_, [w = worker_, config, in_place] { w->loadModel(config, /*may_reload=*/!in_place); },
      Qt::QueuedConnection);
  // Then, in the worker's thread once it is done, the engine it left (if
  // any): the server starts on it, or learns its new settings.
  QMetaObject::invokeMethod(
      worker_,
      [this, w = worker_, in_place] {
        std::optional<kvscope::EngineConfig> engine_config;
        kvscope::ModelInfo info;
        w->withEngine([&](kvscope::Engine& e) {
          engine_config = e.config();
          info = e.model_info();
        });
        QMetaObject::invokeMethod(
            this,
            [this, engine_config, info, in_place] {
              --loads_in_flight_;
              engine_config_ = engine_config;
              if (in_place) {
                server_->engineReconfigured(info);
              } else {
                server_->engineLoadDone(engine_config.has_value());
              }
            },
            Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
}

void EngineHost::submitChat(const kvscope::ui::ChatHistory& messages, const kvscope::SamplingParams& sampling,
                            int n) {
  if (worker_)
    QMetaObject::invokeMethod(worker_, [w = worker_, messages, sampling, n] { w->submitChat(messages, sampling, n); },
                              Qt::QueuedConnection);
}

void EngineHost::cancel(quint64 request_id) {
  if (worker_) QMetaObject::invokeMethod(worker_, [w = worker_, request_id] { w->cancel(request_id); }, Qt::QueuedConnection);
}

void EngineHost::setTracing(bool on) {
  if (worker_) QMetaObject::invokeMethod(worker_, [w = worker_, on] { w->setTracing(on); }, Qt::QueuedConnection);
}

void EngineHost::startWorkload(const kvscope::ui::WorkloadSpec& spec) {
  if (worker_) QMetaObject::invokeMethod(worker_, [w = worker_, spec] { w->startWorkload(spec); }, Qt::QueuedConnection);
}

void EngineHost::stopWorkload() {
  if (worker_) QMetaObject::invokeMethod(worker_, [w = worker_] { w->stopWorkload(); }, Qt::QueuedConnection);
}

}  // namespace kvscope::gui
