// The server's way into the app's engine worker (see gui_engine_driver.h).
#include "gui_engine_driver.h"

#include <condition_variable>

#include <QMetaObject>

#include "engine_worker.h"
#include "kvscope/engine.h"

namespace kvscope::gui {

// One run_between_steps call. `fn` points into the caller's frame, so it is
// run only while the caller still waits: a job that close() answered stays
// unrun even if the worker reaches it later.
struct GuiEngineDriver::Job {
  enum class Phase { Queued, Running, Done };
  const std::function<void(Engine&)>* fn = nullptr;
  Engine* engine = nullptr;  // the engine the driver was open on when it was asked
  std::mutex mutex;
  std::condition_variable done_cv;
  Phase phase = Phase::Queued;
  bool ran = false;
};

GuiEngineDriver::GuiEngineDriver(EngineWorker* worker, QObject* parent) : QObject(parent), worker_(worker) {}

GuiEngineDriver::~GuiEngineDriver() {
  close();
  alive_->store(false);
}

bool GuiEngineDriver::open() {
  Engine* engine = nullptr;
  worker_->withEngine([&engine](Engine& e) { engine = &e; });
  std::lock_guard lock(mutex_);
  if (engine != engine_.load()) {
    // Requests of an engine that is gone never report their end.
    live_.clear();
    early_finishes_.clear();
  }
  engine_.store(engine);
  open_ = engine != nullptr;
  return open_;
}

void GuiEngineDriver::close() {
  std::set<std::shared_ptr<Job>> queued;
  {
    std::lock_guard lock(mutex_);
    open_ = false;
    queued.swap(queued_);
  }
  for (const std::shared_ptr<Job>& job : queued) abandonJob(job);
}

bool GuiEngineDriver::isOpen() const {
  std::lock_guard lock(mutex_);
  return open_;
}

int GuiEngineDriver::numLiveRequests() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(live_.size());
}

Result<RequestId> GuiEngineDriver::submit(GenerationRequest request, SubmittedPrompt* submitted) {
  Engine* expected = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!open_) return Error{"the engine is being reloaded or the server is stopping; try again"};
    expected = engine_.load();
  }
  // The request's own callback (the server's job) first, then the driver's
  // count of the request's completions, for the "server" tag's lifetime.
  std::function<void(const TokenEvent&)> job_callback = std::move(request.on_event);
  std::shared_ptr<std::atomic<bool>> alive = alive_;
  request.on_event = [this, alive, job_callback](const TokenEvent& ev) {
    if (job_callback) job_callback(ev);
    if (ev.finish != FinishReason::None && alive->load()) onRequestEvent(ev.id, ev.finish);
  };
  const int num_completions = std::max(1, request.n);
  Result<RequestId> id = Error{"the engine is being reloaded; try again"};
  // Under the worker's engine lock, so that the engine cannot be swapped
  // meanwhile; the worker steps without that lock, so the request may finish
  // before the count below is set (onRequestEvent keeps such early finishes).
  worker_->withEngine([&](Engine& engine) {
    if (&engine == expected) id = engine.submit(std::move(request), submitted);
  });
  if (!id.ok()) return id;
  bool finished_already = false;
  {
    std::lock_guard lock(mutex_);
    int remaining = num_completions;
    if (auto early = early_finishes_.find(*id); early != early_finishes_.end()) {
      remaining -= early->second;
      early_finishes_.erase(early);
    }
    if (remaining > 0) {
      live_[*id] = remaining;
    } else {
      finished_already = true;
    }
  }
  emit requestSubmitted(*id);
  if (finished_already) emit requestFinished(*id);
  worker_->wake();
  return id;
}

void GuiEngineDriver::cancel(RequestId id) {
  // Also while closed: stopping the server cancels its requests, and the
  // engine they run on is still the one the driver was opened on.
  Engine* expected = engine_.load();
  worker_->withEngine([&](Engine& engine) {
    if (&engine == expected) engine.cancel(id);
  });
  worker_->wake();
}

void GuiEngineDriver::onRequestEvent(RequestId id, FinishReason) {
  bool last = false;
  {
    std::lock_guard lock(mutex_);
    auto live = live_.find(id);
    if (live == live_.end()) {
      ++early_finishes_[id];  // submit() has not counted it yet
      return;
    }
    if (--live->second <= 0) {
      live_.erase(live);
      last = true;
    }
  }
  if (last) emit requestFinished(id);
}

bool GuiEngineDriver::run_between_steps(const std::function<void(Engine&)>& fn) {
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  {
    std::lock_guard lock(mutex_);
    if (!open_) return false;
    job->engine = engine_.load();
    queued_.insert(job);
  }
  // Runs in the worker's thread between two steps (one step per event-loop
  // turn). Dropped unrun if the worker is deleted first: `guard`'s destructor
  // then answers the caller.
  struct DropGuard {
    DropGuard(GuiEngineDriver* d, std::shared_ptr<Job> j) : driver(d), job(std::move(j)) {}
    ~DropGuard() { driver->abandonJob(job); }
    DropGuard(const DropGuard&) = delete;
    DropGuard& operator=(const DropGuard&) = delete;
    GuiEngineDriver* driver;
    std::shared_ptr<Job> job;
  };
  auto guard = std::make_shared<DropGuard>(this, job);
  EngineWorker* worker = worker_;
  QMetaObject::invokeMethod(
      worker_,
      [this, worker, guard] {
        const std::shared_ptr<Job>& j = guard->job;
        {
          std::lock_guard lock(mutex_);
          queued_.erase(j);
        }
        {
          std::lock_guard lock(j->mutex);
          if (j->phase != Job::Phase::Queued) return;  // answered by close()
          j->phase = Job::Phase::Running;
        }
        bool ran = false;
        worker->withEngine([&](Engine& engine) {
          if (&engine != j->engine) return;  // replaced since: not the engine the caller meant
          (*j->fn)(engine);
          ran = true;
        });
        finishJob(j, ran);
      },
      Qt::QueuedConnection);
  std::unique_lock lock(job->mutex);
  job->done_cv.wait(lock, [&] { return job->phase == Job::Phase::Done; });
  return job->ran;
}

void GuiEngineDriver::finishJob(const std::shared_ptr<Job>& job, bool ran) {
  {
    std::lock_guard lock(job->mutex);
    job->phase = Job::Phase::Done;
    job->ran = ran;
  }
  job->done_cv.notify_all();
}

void GuiEngineDriver::abandonJob(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lock(job->mutex);
    // One the worker is running is answered by the worker when it is done.
    if (job->phase != Job::Phase::Queued) return;
    job->phase = Job::Phase::Done;
    job->ran = false;
  }
  job->done_cv.notify_all();
}

const Engine& GuiEngineDriver::engine() const { return *engine_.load(); }

}  // namespace kvscope::gui
