// InProcessCommunicator: ranks are threads of one process that share memory.
// An InProcessGroup made for N ranks hands out one communicator per rank;
// each rank's thread uses only its own. Collectives publish a pointer to the
// rank's buffer, meet at a barrier, read what the others published, and meet
// again before anyone may reuse a buffer.
//
// all_reduce_sum adds the contributions in rank order 0..N-1 on every rank,
// so every rank computes bitwise the same sum (no rank sees a different
// association of the additions). Tested by tests/engine/parallel/
// communicator_test.cpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "parallel/communicator.h"

namespace kvscope {

class InProcessGroup;

class InProcessCommunicator final : public Communicator {
 public:
  int32_t rank() const override { return rank_; }
  int32_t world_size() const override;
  void all_reduce_sum(float* data, int64_t n) override;
  void all_gather(const float* mine, int64_t n, float* all) override;
  void broadcast(float* data, int64_t n, int32_t root) override;
  void barrier() override;

 private:
  friend class InProcessGroup;
  InProcessCommunicator(InProcessGroup& group, int32_t rank) : group_(&group), rank_(rank) {}

  InProcessGroup* group_;  // not owned; outlives this
  int32_t rank_;
  std::vector<float> sum_;  // all_reduce_sum's result before it is copied out
};

// The shared state of N in-process ranks. Must outlive its communicators.
class InProcessGroup {
 public:
  // Precondition: num_ranks >= 1.
  explicit InProcessGroup(int32_t num_ranks);
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int32_t num_ranks() const { return num_ranks_; }
  // Rank r's communicator, for rank r's thread only.
  InProcessCommunicator& communicator(int32_t rank) { return *comms_[static_cast<size_t>(rank)]; }

 private:
  friend class InProcessCommunicator;
  // Generation-counted barrier: the last rank to arrive starts a new
  // generation and wakes the others, who wait for the generation to change
  // (so a rank racing ahead into the next barrier cannot be counted twice).
  // Waiters spin briefly before sleeping: a forward pass meets here several
  // times per layer, microseconds apart, and a sleep/wake costs more than
  // that (as ThreadPool's workers do).
  void wait_all();

  int32_t num_ranks_;
  std::vector<std::unique_ptr<InProcessCommunicator>> comms_;
  // Each rank's published buffer for the collective in progress.
  std::vector<const float*> buffers_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  int32_t num_waiting_ = 0;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace kvscope
