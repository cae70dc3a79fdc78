// The server's stepping thread (see step_loop.h).
//
// Why it never sleeps through work: submit() bumps the engine's pending count
// (Engine::submit) before wake() bumps num_wakes_ under the mutex. The loop
// reads num_wakes_ under the mutex before asking has_work(), and sleeps only
// while num_wakes_ is unchanged, so a submit it did not see as work has woken it.
#include "step_loop.h"

namespace kvscope::server {

StepLoop::StepLoop(Engine& engine) : engine_(engine), thread_([this] { run(); }) {}

StepLoop::~StepLoop() { stop(); }

void StepLoop::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StepLoop::wake() {
  {
    std::lock_guard lock(mutex_);
    ++num_wakes_;
  }
  wake_cv_.notify_all();
}

Result<RequestId> StepLoop::submit(GenerationRequest request, SubmittedPrompt* submitted) {
  Result<RequestId> id = engine_.submit(std::move(request), submitted);
  if (id.ok()) wake();
  return id;
}

void StepLoop::cancel(RequestId id) {
  engine_.cancel(id);
  wake();
}

bool StepLoop::run_between_steps(const std::function<void(Engine&)>& fn) {
  Job job;
  job.fn = &fn;
  std::unique_lock lock(mutex_);
  if (stopping_) return false;
  jobs_.push_back(&job);
  ++num_wakes_;
  wake_cv_.notify_all();
  job_done_cv_.wait(lock, [&] { return job.done; });
  return job.ran;
}

void StepLoop::run_jobs(std::unique_lock<std::mutex>& lock) {
  while (!jobs_.empty()) {
    Job* job = jobs_.front();
    jobs_.pop_front();
    lock.unlock();
    (*job->fn)(engine_);
    lock.lock();
    job->ran = true;
    job->done = true;
  }
  job_done_cv_.notify_all();
}

void StepLoop::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    run_jobs(lock);
    const uint64_t seen = num_wakes_;
    if (engine_.has_work()) {
      lock.unlock();
      engine_.step();
      lock.lock();
      continue;
    }
    wake_cv_.wait(lock, [&] { return stopping_ || num_wakes_ != seen || !jobs_.empty(); });
  }
  // Jobs that came too late are answered "not run", so that no caller waits forever.
  for (Job* job : jobs_) job->done = true;
  jobs_.clear();
  job_done_cv_.notify_all();
}

}  // namespace kvscope::server
