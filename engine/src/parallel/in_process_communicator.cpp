#include "parallel/in_process_communicator.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <thread>
#include <vector>

namespace kvscope {

InProcessGroup::InProcessGroup(int32_t num_ranks)
    : num_ranks_(num_ranks), buffers_(static_cast<size_t>(num_ranks), nullptr) {
  assert(num_ranks >= 1);
  for (int32_t r = 0; r < num_ranks; ++r) comms_.emplace_back(new InProcessCommunicator(*this, r));
}

void InProcessGroup::wait_all() {
  if (num_ranks_ == 1) return;
  std::unique_lock lock(mutex_);
  const uint64_t gen = generation_.load(std::memory_order_relaxed);
  if (++num_waiting_ == num_ranks_) {
    num_waiting_ = 0;
    // Release: whoever sees the new generation also sees every buffer the
    // ranks published before arriving (they did so under the mutex).
    generation_.store(gen + 1, std::memory_order_release);
    arrived_.notify_all();
    return;
  }
  lock.unlock();
  // A short spin, then yields (on an oversubscribed machine the rank being
  // waited for may need this core), then sleep.
  constexpr int kSpins = 1000, kYields = 50;
  for (int i = 0; i < kSpins + kYields; ++i) {
    if (generation_.load(std::memory_order_acquire) != gen) return;
    if (i < kSpins) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
  lock.lock();
  arrived_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != gen; });
}

int32_t InProcessCommunicator::world_size() const { return group_->num_ranks_; }

void InProcessCommunicator::barrier() { group_->wait_all(); }

void InProcessCommunicator::all_reduce_sum(float* data, int64_t n) {
  InProcessGroup& g = *group_;
  if (g.num_ranks_ == 1) return;
  // Each rank sums into a private copy, reading every rank's published input;
  // nobody overwrites its input until all have read it (second barrier).
  std::vector<float>& sum = sum_;
  sum.resize(static_cast<size_t>(n));
  g.buffers_[static_cast<size_t>(rank_)] = data;
  g.wait_all();
  std::memcpy(sum.data(), g.buffers_[0], static_cast<size_t>(n) * sizeof(float));
  for (int32_t r = 1; r < g.num_ranks_; ++r) {
    const float* src = g.buffers_[static_cast<size_t>(r)];
    for (int64_t i = 0; i < n; ++i) sum[static_cast<size_t>(i)] += src[i];
  }
  g.wait_all();
  std::memcpy(data, sum.data(), static_cast<size_t>(n) * sizeof(float));
}

void InProcessCommunicator::all_gather(const float* mine, int64_t n, float* all) {
  InProcessGroup& g = *group_;
  g.buffers_[static_cast<size_t>(rank_)] = mine;
  g.wait_all();
  for (int32_t r = 0; r < g.num_ranks_; ++r) {
    std::memcpy(all + r * n, g.buffers_[static_cast<size_t>(r)], static_cast<size_t>(n) * sizeof(float));
  }
  g.wait_all();
}

void InProcessCommunicator::broadcast(float* data, int64_t n, int32_t root) {
  InProcessGroup& g = *group_;
  assert(root >= 0 && root < g.num_ranks_);
  g.buffers_[static_cast<size_t>(rank_)] = data;
  g.wait_all();
  if (rank_ != root) std::memcpy(data, g.buffers_[static_cast<size_t>(root)], static_cast<size_t>(n) * sizeof(float));
  g.wait_all();
}

}  // namespace kvscope
