// NcclCommunicator: the Communicator over NCCL, for ranks that are GPUs of
// one machine driven by one process. Built only with -DKVSCOPE_NCCL=ON
// (KVSCOPE_HAVE_NCCL = 1); it needs the CUDA runtime and NCCL (nccl.h from
// /usr/include or the CUDA toolkit, engine/src/parallel/CMakeLists.txt).
//
// Model: one thread per GPU in one process. NcclGroup::create calls
// ncclCommInitAll over the listed devices, which makes the N communicators
// together (no unique-id exchange, no MPI); rank r's thread then uses only
// communicator(r), with rank r's device current. Every pointer given to an
// operation is device memory on that rank's GPU. Each operation is enqueued
// on the communicator's own stream and waited for before returning, so the
// caller sees a completed result as with InProcessCommunicator (simple, not
// the fastest: a GPU runner would rather keep work on its stream).
//
// Reduction order: every rank receives the same bits (NCCL's ring all-reduce
// ends with an all-gather of the reduced chunks), but the association of the
// sum is NCCL's, not rank order 0..N-1. The runner's deterministic mode never
// relies on all_reduce_sum's order: it all_gathers partial results and sums
// them itself in a fixed order (docs/tensor-parallel.md).
//
// Not run in this project's CI: it needs GPUs. tests/engine/parallel/
// nccl_communicator_test.cpp (label gpu) runs the collectives when devices
// are present and skips otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kvscope/result.h"
#include "parallel/communicator.h"

namespace kvscope {

class NcclCommunicator final : public Communicator {
 public:
  ~NcclCommunicator() override;
  int32_t rank() const override { return rank_; }
  int32_t world_size() const override { return world_size_; }
  void all_reduce_sum(float* data, int64_t n) override;
  void all_gather(const float* mine, int64_t n, float* all) override;
  void broadcast(float* data, int64_t n, int32_t root) override;
  void barrier() override;

 private:
  friend class NcclGroup;
  struct Handles;  // ncclComm_t and cudaStream_t, kept out of this header
  NcclCommunicator(int32_t rank, int32_t world_size, int32_t device, std::unique_ptr<Handles> handles);
  void synchronize();

  int32_t rank_, world_size_, device_;
  std::unique_ptr<Handles> handles_;
  float* barrier_word_ = nullptr;  // one float of device memory reduced by barrier()
};

class NcclGroup {
 public:
  // One rank per listed CUDA device (rank r = devices[r]). Errors name the
  // CUDA or NCCL failure (no device, NCCL not initialisable).
  static Result<std::unique_ptr<NcclGroup>> create(const std::vector<int32_t>& devices);

  int32_t num_ranks() const { return static_cast<int32_t>(comms_.size()); }
  NcclCommunicator& communicator(int32_t rank) { return *comms_[static_cast<size_t>(rank)]; }

 private:
  std::vector<std::unique_ptr<NcclCommunicator>> comms_;
};

}  // namespace kvscope
