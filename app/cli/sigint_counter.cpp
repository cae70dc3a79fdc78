// SIGINT counted, not obeyed (see sigint_counter.h).
#include "sigint_counter.h"

#include <atomic>

namespace kvscope::cli {
namespace {

// Lock-free, so touching it from a signal handler is async-signal-safe.
std::atomic<int> g_num_interrupts{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_sigint(int) { g_num_interrupts.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

SigintCounter::SigintCounter() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, &previous_);
}

SigintCounter::~SigintCounter() { sigaction(SIGINT, &previous_, nullptr); }

int SigintCounter::count() { return g_num_interrupts.load(std::memory_order_relaxed); }

}  // namespace kvscope::cli
