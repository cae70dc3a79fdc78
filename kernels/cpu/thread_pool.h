// Persistent worker threads for the CPU kernels. Decode calls parallel_for
// ~150 times per token with a few microseconds of work each, so dispatch must
// be cheap: workers spin on an atomic generation counter for a short while
// (~200 us) after each job and only then sleep on a condition variable, so an
// idle pool costs no CPU. The calling thread claims chunks like the workers,
// so a worker that is descheduled or still waking does not stall the job.
//
// Not re-entrant: one thread calls parallel_for at a time and fn must not call
// parallel_for on the same pool. Tested by tests/kernels/thread_pool_test.cpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace kvscope {

class ThreadPool {
 public:
  // num_threads includes the calling thread; 0 means hardware_concurrency().
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Splits [0, num_tasks) into num_threads() contiguous chunks (chunk i is
  // [i*n/T, (i+1)*n/T)) and calls fn(begin, end) once for every non-empty
  // chunk; returns when all are done. Which thread runs which chunk is not
  // fixed (whoever is free claims the next one), so results must not depend
  // on it.
  template <typename F>
  void parallel_for(int64_t num_tasks, F&& fn) {
    parallel_for_chunks(num_tasks, num_threads_, std::forward<F>(fn));
  }

  // The same with num_chunks chunks (chunk i is [i*n/C, (i+1)*n/C); C is
  // clamped to [1, 2^20]). More chunks than threads let the threads that are
  // running take more of a long job when one is descheduled or late (each
  // thread claims the next chunk when it finishes one).
  template <typename F>
  void parallel_for_chunks(int64_t num_tasks, int num_chunks, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    run(num_tasks, num_chunks, [](void* ctx, int64_t begin, int64_t end) { (*static_cast<Fn*>(ctx))(begin, end); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using TaskFn = void (*)(void* ctx, int64_t begin, int64_t end);

  void run(int64_t num_tasks, int num_chunks, TaskFn fn, void* ctx);
  void worker_loop();
  void run_chunks();

  int num_threads_ = 1;
  std::vector<std::thread> workers_;

  // The current job; written by the caller before generation_ is bumped
  // (release) and read by workers after they see the new generation (acquire).
  TaskFn job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  int64_t job_num_tasks_ = 0;

  alignas(64) std::atomic<uint32_t> generation_{0};
  // The job's chunk count (high 32 bits) and the next chunk to claim (low 32
  // bits; >= the count: none). One word, so a thread still claiming from the
  // previous job compares its index with that job's count, never the next's.
  alignas(64) std::atomic<uint64_t> next_chunk_{0};
  alignas(64) std::atomic<int> num_pending_{0};  // chunks of the job not yet finished
  alignas(64) std::atomic<int> num_sleeping_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace kvscope
