// ThreadPool; see thread_pool.h for the design.
//
// Wake-up protocol (no lost wake-ups): a worker about to sleep increments
// num_sleeping_ and re-checks generation_ under the mutex; the dispatcher bumps
// generation_ and then reads num_sleeping_. Both are seq_cst, so either the
// dispatcher sees the sleeper and notifies (under the mutex), or the worker
// sees the new generation and does not sleep.
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <cassert>
#include <chrono>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace kvscope {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long an idle worker spins before it sleeps.
constexpr auto kSpinTime = std::chrono::microseconds(200);
// Pause-spins before a waiting thread starts yielding its core instead.
constexpr int kSpinsBeforeYield = 2000;

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::thread::hardware_concurrency());
  num_threads_ = num_threads > 0 ? num_threads : 1;
  workers_.reserve(static_cast<size_t>(num_threads_ - 1));
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

// Claims chunks of the current job until none is left. Any thread may run any
// chunk: on a shared machine a worker is often descheduled or still waking
// (a futex wake costs tens of microseconds, a decode matmul chunk about as
// much), and the caller then runs its chunk rather than wait for it. A claim
// reads the job's chunk count from the same word (acquire: a claim that gets
// a chunk of the new job also sees the job's fields written before it).
void ThreadPool::run_chunks() {
  for (;;) {
    const uint64_t claim = next_chunk_.fetch_add(1, std::memory_order_acq_rel);
    const int64_t index = static_cast<int64_t>(claim & 0xffffffffu);
    const int64_t num_chunks = static_cast<int64_t>(claim >> 32);
    if (index >= num_chunks) return;
    const int64_t n = job_num_tasks_;
    const int64_t begin = n * index / num_chunks;
    const int64_t end = n * (index + 1) / num_chunks;
    if (begin < end) job_fn_(job_ctx_, begin, end);
    num_pending_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::run(int64_t num_tasks, int num_chunks, TaskFn fn, void* ctx) {
  if (num_tasks <= 0) return;
  num_chunks = std::clamp(num_chunks, 1, 1 << 20);
  if (num_threads_ == 1 || num_tasks == 1 || num_chunks == 1) {
    fn(ctx, 0, num_tasks);
    return;
  }
  assert(num_pending_.load() == 0 && "ThreadPool::parallel_for is not re-entrant");
  job_fn_ = fn;
  job_ctx_ = ctx;
  job_num_tasks_ = num_tasks;
  num_pending_.store(num_chunks, std::memory_order_relaxed);
  // Opens the chunks (release: a worker that claims one, even one still
  // looping from the previous job, sees the job written above).
  next_chunk_.store(static_cast<uint64_t>(num_chunks) << 32, std::memory_order_release);
  generation_.fetch_add(1);  // seq_cst: publishes the job (release) and orders before the read below
  if (num_sleeping_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  run_chunks();
  // Spin briefly, then yield: with more threads than free cores a worker may
  // be running its chunk on a core this thread's yield lets it have.
  for (int spins = 0; num_pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinsBeforeYield) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  for (;;) {
    // Spin for a while, then sleep until the generation changes.
    uint32_t gen = generation_.load(std::memory_order_acquire);
    if (gen == seen) {
      const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
      for (int spins = 0; gen == seen; ++spins) {
        if (spins < kSpinsBeforeYield) {
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
        gen = generation_.load(std::memory_order_acquire);
        if ((spins & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
      }
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      num_sleeping_.fetch_add(1);
      while ((gen = generation_.load()) == seen) wake_.wait(lock);
      num_sleeping_.fetch_sub(1);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    run_chunks();
  }
}

}  // namespace kvscope
