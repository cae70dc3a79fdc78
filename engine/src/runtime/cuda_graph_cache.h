// CudaGraphCache: a step's launches captured once as a CUDA graph and
// replayed for every later step with the same launch key. Compiled only with
// KVSCOPE_CUDA=ON; used by CudaBackend (runtime/cuda_backend.h).
//
// Why: a decode step of the default model is ~270 small kernels, a few
// microseconds of GPU work each, and launching them one by one costs about as
// much host time as they take on the device. A graph launch submits them all
// at once and the device runs them back to back.
//
// What a key is: every value the captured launches depend on that can change
// from step to step without changing the device data they read: grid sizes
// (token and sequence counts, the attention plan's counts), offsets into the
// step's uploaded arrays, and the addresses of every buffer (a buffer that
// grew has a new address, so its steps get a new graph). Two steps with equal
// keys issue the same launches with the same arguments; only the contents of
// the uploaded arrays (token ids, positions, slots, block tables, the plan)
// differ, and those are read from device memory at replay time. So a replay
// computes exactly the bits the launches would, one by one.
//
// Policy: a key is captured the second time it is seen (a prefill chunk's
// shape rarely comes back; a decode batch's comes back every step), and at
// most `capacity` graphs are kept, the least recently used going first (32:
// a decode shape's attention-timed step is a key of its own).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace kvscope {

class CudaGraphCache {
 public:
  using Key = std::vector<int64_t>;

  explicit CudaGraphCache(size_t capacity = 32);
  ~CudaGraphCache();
  CudaGraphCache(const CudaGraphCache&) = delete;
  CudaGraphCache& operator=(const CudaGraphCache&) = delete;

  // The instantiated graph for key, or nullptr.
  cudaGraphExec_t find(const Key& key);
  // Records a sighting of key; true if it had been seen before (then capture it).
  bool seen_before(const Key& key);
  // Captures what enqueue(stream) launches on a capture stream of the cache's
  // own, instantiates it and keeps it under key. nullptr with *error set when
  // the runtime refuses (the caller then runs without graphs).
  cudaGraphExec_t capture(const Key& key, const std::function<void(cudaStream_t)>& enqueue, std::string* error);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Key key;
    cudaGraphExec_t exec = nullptr;
    uint64_t last_use = 0;
  };
  size_t capacity_;
  cudaStream_t capture_stream_ = nullptr;
  std::vector<Entry> entries_;
  std::deque<Key> seen_;  // keys seen once, oldest first (bounded)
  uint64_t clock_ = 0;
};

}  // namespace kvscope
