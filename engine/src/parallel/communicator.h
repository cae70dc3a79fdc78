// Communicator: the collective operations tensor parallelism needs, one
// object per rank (docs/tensor-parallel.md). Every rank of a group calls the
// same operations in the same order with the same lengths; each call returns
// on a rank once that rank's result is complete.
//
// Implementations: InProcessCommunicator (ranks are threads of one process,
// shared memory; this file's neighbour) and NcclCommunicator (one thread per
// GPU, built only with -DKVSCOPE_NCCL=ON, nccl_communicator.h).
#pragma once

#include <cstdint>

namespace kvscope {

class Communicator {
 public:
  virtual ~Communicator() = default;

  // Required: this rank's index in [0, world_size()).
  virtual int32_t rank() const = 0;
  // Required: the number of ranks in the group.
  virtual int32_t world_size() const = 0;

  // Required: data[i] = sum over ranks r = 0..N-1, in that order, of rank r's
  // data[i]. Every rank ends with bitwise the same n values.
  virtual void all_reduce_sum(float* data, int64_t n) = 0;
  // Required: all[r * n + i] = rank r's mine[i], for every rank r.
  // all: [world_size() * n]; mine and all must not overlap.
  virtual void all_gather(const float* mine, int64_t n, float* all) = 0;
  // Required: every rank's data[0, n) becomes rank `root`'s.
  virtual void broadcast(float* data, int64_t n, int32_t root) = 0;
  // Required: returns on a rank only after every rank has called it.
  virtual void barrier() = 0;
};

}  // namespace kvscope
