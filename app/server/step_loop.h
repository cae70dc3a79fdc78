// StepLoop: a thread that owns the stepping of one Engine for the server
// (kvscope-cli serve). It steps while the engine has work and sleeps on a
// condition variable when it has none; submit() and cancel() wake it, and
// run_between_steps() hands it small jobs (metrics, snapshots) to run
// between two steps, where the engine's stepping-thread-only calls are safe.
//
//   StepLoop loop(*engine);           // the thread starts here
//   loop.submit(std::move(request));  // from any thread
//   loop.stop();                      // after the step in flight; the destructor calls it
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "engine_driver.h"

namespace kvscope::server {

class StepLoop final : public EngineDriver {
 public:
  explicit StepLoop(Engine& engine);
  ~StepLoop() override;
  StepLoop(const StepLoop&) = delete;
  StepLoop& operator=(const StepLoop&) = delete;

  Result<RequestId> submit(GenerationRequest request, SubmittedPrompt* submitted) override;
  void cancel(RequestId id) override;
  bool run_between_steps(const std::function<void(Engine&)>& fn) override;
  const Engine& engine() const override { return engine_; }

  // Ends the thread after the step in flight. Requests still in the engine
  // stay unfinished (cancel them first to have their callbacks told); jobs
  // queued for run_between_steps are not run (it returns false). Idempotent.
  void stop();

 private:
  struct Job {
    const std::function<void(Engine&)>* fn = nullptr;
    bool done = false;
    bool ran = false;
  };

  void run();
  void wake();
  // Runs the queued jobs; called with `lock` held, releases it around each job.
  void run_jobs(std::unique_lock<std::mutex>& lock);

  Engine& engine_;
  std::mutex mutex_;
  std::condition_variable wake_cv_;     // the loop waits here for work
  std::condition_variable job_done_cv_;  // run_between_steps callers wait here
  uint64_t num_wakes_ = 0;  // bumped by every wake(): the loop sleeps only if none came since it looked for work
  bool stopping_ = false;
  std::deque<Job*> jobs_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace kvscope::server
