// CudaGraphCache; see cuda_graph_cache.h.
#include "runtime/cuda_graph_cache.h"

#include <fmt/format.h>

#include <algorithm>

namespace kvscope {
namespace {

// Keys seen once that are remembered: a decode batch's key recurs at the next
// step, so a short memory is enough, and a long prefill's chunks do not pile up.
constexpr size_t kMaxSeenOnce = 32;

}  // namespace

CudaGraphCache::CudaGraphCache(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

CudaGraphCache::~CudaGraphCache() {
  for (Entry& e : entries_) cudaGraphExecDestroy(e.exec);
  if (capture_stream_) cudaStreamDestroy(capture_stream_);
}

cudaGraphExec_t CudaGraphCache::find(const Key& key) {
  for (Entry& e : entries_) {
    if (e.key == key) {
      e.last_use = ++clock_;
      return e.exec;
    }
  }
  return nullptr;
}

bool CudaGraphCache::seen_before(const Key& key) {
  if (std::find(seen_.begin(), seen_.end(), key) != seen_.end()) return true;
  seen_.push_back(key);
  if (seen_.size() > kMaxSeenOnce) seen_.pop_front();
  return false;
}

cudaGraphExec_t CudaGraphCache::capture(const Key& key, const std::function<void(cudaStream_t)>& enqueue,
                                        std::string* error) {
  auto failed = [&](const char* what, cudaError_t e) -> cudaGraphExec_t {
    *error = fmt::format("{}: {}", what, cudaGetErrorString(e));
    cudaGetLastError();  // the failure is reported here, not by the next launch's check
    return nullptr;
  };
  // A non-blocking stream: nothing runs on it (it only records), so it must
  // not take part in the legacy stream's implicit ordering during capture.
  if (!capture_stream_) {
    if (cudaError_t e = cudaStreamCreateWithFlags(&capture_stream_, cudaStreamNonBlocking); e != cudaSuccess) {
      return failed("cudaStreamCreateWithFlags", e);
    }
  }
  // Thread-local mode: this thread may not make calls that would synchronise
  // with the capture (allocations, synchronous copies) until it ends; other
  // threads (the KV pool's users are this thread too) are unaffected.
  if (cudaError_t e = cudaStreamBeginCapture(capture_stream_, cudaStreamCaptureModeThreadLocal); e != cudaSuccess) {
    return failed("cudaStreamBeginCapture", e);
  }
  enqueue(capture_stream_);
  cudaGraph_t graph = nullptr;
  if (cudaError_t e = cudaStreamEndCapture(capture_stream_, &graph); e != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    return failed("cudaStreamEndCapture", e);
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (instantiated != cudaSuccess) return failed("cudaGraphInstantiate", instantiated);
  if (entries_.size() >= capacity_) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
    // Not running: the caller synchronises at the end of every step, so no
    // launch of it is in flight.
    cudaGraphExecDestroy(oldest->exec);
    entries_.erase(oldest);
  }
  entries_.push_back(Entry{key, exec, ++clock_});
  return exec;
}

}  // namespace kvscope
