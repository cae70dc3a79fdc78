// SIGINT counted, not obeyed (see sigint_counter.h).
#include "sigint_counter.h"

#include <atomic>
#include <csignal>

namespace kvscope::cli {
namespace {

// Lock-free, so touching them from a signal handler is async-signal-safe.
std::atomic<int> g_num_interrupts{0};
std::atomic<int> g_quit_at{0};  // the count at which a press quits; 0: never
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_sigint(int) {
  const int n = g_num_interrupts.fetch_add(1, std::memory_order_relaxed) + 1;
  const int quit_at = g_quit_at.load(std::memory_order_relaxed);
  if (quit_at > 0 && n >= quit_at) {
    // signal() and raise() are async-signal-safe: die as Ctrl-C kills.
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

}  // namespace

SigintCounter::SigintCounter(bool second_press_quits) {
  if (second_press_quits) g_quit_at.store(count() + 2, std::memory_order_relaxed);
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, &previous_);
}

SigintCounter::~SigintCounter() {
  sigaction(SIGINT, &previous_, nullptr);
  g_quit_at.store(0, std::memory_order_relaxed);
}

int SigintCounter::count() { return g_num_interrupts.load(std::memory_order_relaxed); }

}  // namespace kvscope::cli
