// Helpers shared by the CUDA kernel tests (label gpu):
//   KVSCOPE_REQUIRE_CUDA_DEVICE()  skips the test when no device is usable,
//       with cudaGetDeviceCount's error string as the reason; with
//       KVSCOPE_REQUIRE_GPU=1 in the environment a missing device fails instead
//       (scripts/gpu_check.sh sets it, so a GPU run cannot pass by skipping);
//   DeviceBuffer<T>  cudaMalloc'd array with upload / download / poison
//       (every byte 0xff: NaN for f32, f16 and bf16, 0xff for bytes), so an
//       output element a kernel never wrote shows up as NaN or a wrong byte;
//   normalised_error  ||out - ref|| / ||ref||, infinite when out has a NaN.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace kvscope::cuda_test {

// Empty when a device is usable, else why not.
inline std::string device_missing_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e);
  if (count == 0) return "no CUDA device: cudaGetDeviceCount found 0 devices";
  return {};
}

inline bool gpu_required() {
  const char* v = std::getenv("KVSCOPE_REQUIRE_GPU");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

#define KVSCOPE_REQUIRE_CUDA_DEVICE()                                                      \
  do {                                                                                     \
    const std::string kvscope_reason_ = ::kvscope::cuda_test::device_missing_reason();    \
    if (!kvscope_reason_.empty()) {                                                        \
      if (::kvscope::cuda_test::gpu_required()) FAIL() << kvscope_reason_ << " (KVSCOPE_REQUIRE_GPU=1)"; \
      GTEST_SKIP() << kvscope_reason_;                                                     \
    }                                                                                      \
  } while (0)

// Asserts a CUDA call succeeded, naming the call and the error.
#define CUDA_OK(expr)                                                                      \
  do {                                                                                     \
    const cudaError_t kvscope_e_ = (expr);                                                 \
    ASSERT_EQ(kvscope_e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(kvscope_e_); \
  } while (0)

// A launch, then a synchronisation, so errors inside the kernel surface here.
#define LAUNCH_OK(expr)                 \
  do {                                  \
    CUDA_OK(expr);                      \
    CUDA_OK(cudaDeviceSynchronize());   \
  } while (0)

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n_ > 0 && cudaMalloc(&p_, n_ * sizeof(T)) != cudaSuccess) p_ = nullptr;
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p_); }

  T* get() const { return p_; }
  size_t size() const { return n_; }
  bool ok() const { return n_ == 0 || p_ != nullptr; }

  cudaError_t upload(const std::vector<T>& host) {
    if (host.size() != n_) return cudaErrorInvalidValue;
    return cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice);
  }
  cudaError_t poison() { return cudaMemset(p_, 0xff, n_ * sizeof(T)); }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_ > 0 && cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess) {
      ADD_FAILURE() << "cudaMemcpy device to host failed";
    }
    return host;
  }

 private:
  size_t n_ = 0;
  T* p_ = nullptr;
};

// ||out - ref|| / ||ref|| (ref all zero: ||out - ref||); infinity if out has a NaN or inf.
inline double normalised_error(const std::vector<float>& out, const std::vector<float>& ref) {
  if (out.size() != ref.size()) return INFINITY;
  double diff = 0.0;
  double norm = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) return INFINITY;
    const double d = static_cast<double>(out[i]) - ref[i];
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The odd sizes every kernel test runs (CONVENTIONS.md habit 7) plus a realistic one per op.
inline constexpr int64_t kOddSizes[] = {1, 7, 17, 54, 97};

}  // namespace kvscope::cuda_test
