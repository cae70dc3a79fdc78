// DeviceArray<T>: a cudaMalloc'd array the CUDA backend grows and reuses from
// step to step, and cuda_check(), how the backend meets a failed CUDA call.
// Compiled only with KVSCOPE_CUDA=ON (runtime/cuda_backend.h, kv/device_kv_pool.h).
//
// Why cuda_check aborts: the Backend and KvBlockStore interfaces have no
// error path once a backend exists (forward() returns false only for an
// interrupt), and a failed launch or copy leaves the KV pool and the step's
// logits undefined. Carrying on would sample tokens from garbage; stopping
// with the call and the CUDA error named is the honest outcome. Allocation
// failures at creation are not this: they are returned as errors.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace kvscope {

// Aborts with "kvscope cuda backend: <what>: <CUDA error>" unless e is cudaSuccess.
inline void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "kvscope cuda backend: %s: %s (%s)\n", what, cudaGetErrorString(e), cudaGetErrorName(e));
  std::abort();
}

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(data_); }

  T* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  size_t bytes() const { return capacity_ * sizeof(T); }

  // At least n elements; the contents are not kept when it grows. Growth is
  // by doubling so that a step a little larger than the last does not
  // reallocate every time.
  void reserve(size_t n) {
    if (n <= capacity_) return;
    const size_t want = n > 2 * capacity_ ? n : 2 * capacity_;
    // The stream may still read the old array: wait for it before freeing.
    cuda_check(cudaStreamSynchronize(nullptr), "synchronise before growing a buffer");
    cuda_check(cudaFree(data_), "cudaFree");
    data_ = nullptr;
    capacity_ = 0;
    cuda_check(cudaMalloc(&data_, want * sizeof(T)), "cudaMalloc of a step buffer");
    capacity_ = want;
  }
  // Frees the array (reserve() allocates again).
  void release() {
    cuda_check(cudaStreamSynchronize(nullptr), "synchronise before freeing a buffer");
    cuda_check(cudaFree(data_), "cudaFree");
    data_ = nullptr;
    capacity_ = 0;
  }
  // Copies n host elements in (growing as needed), in stream order on the
  // legacy default stream. From pageable memory the copy is staged before
  // this returns, so `host` may change afterwards.
  void upload(const T* host, size_t n) {
    reserve(n);
    if (n > 0) cuda_check(cudaMemcpyAsync(data_, host, n * sizeof(T), cudaMemcpyHostToDevice, nullptr), "upload");
  }

 private:
  T* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace kvscope
