#include "kernels/cuda/overlapped_launch.h"

#include <atomic>

namespace kvscope::cuda {
namespace {

std::atomic<bool> g_overlapped{true};

}  // namespace

void set_overlapped_launches(bool on) { g_overlapped.store(on, std::memory_order_relaxed); }
bool overlapped_launches() { return g_overlapped.load(std::memory_order_relaxed); }

}  // namespace kvscope::cuda
