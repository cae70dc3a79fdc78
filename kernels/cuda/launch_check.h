// Shared by every launcher in kernels/cuda/: how a launcher refuses bad
// arguments and reports its launch. A launcher checks its preconditions on
// the host before touching the device (bad sizes, null pointers, misaligned
// strides) and returns cudaErrorInvalidValue with a message on stderr naming
// the op and the broken condition; otherwise it launches and returns
// cudaGetLastError(), so an invalid configuration is never silent. Kernels
// run asynchronously: errors inside a kernel surface at the caller's next
// synchronisation, as with any CUDA launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

namespace kvscope::cuda {

// Returns cudaSuccess when ok, else prints "kvscope cuda <op>: <condition>"
// and returns cudaErrorInvalidValue. Used as:
//   if (cudaError_t e = require(n > 0, "rms_norm", "n > 0"); e != cudaSuccess) return e;
inline cudaError_t require(bool ok, const char* op, const char* condition) {
  if (ok) return cudaSuccess;
  std::fprintf(stderr, "kvscope cuda %s: precondition failed: %s\n", op, condition);
  return cudaErrorInvalidValue;
}

// Blocks of `per_block` covering n items.
inline unsigned int num_blocks_for(int64_t n, int64_t per_block) {
  return static_cast<unsigned int>((n + per_block - 1) / per_block);
}

}  // namespace kvscope::cuda

// Returns from the enclosing launcher when a precondition fails.
#define KVSCOPE_CUDA_REQUIRE(op, cond)                                            \
  do {                                                                            \
    if (cudaError_t kvscope_err_ = ::kvscope::cuda::require((cond), (op), #cond); \
        kvscope_err_ != cudaSuccess)                                              \
      return kvscope_err_;                                                        \
  } while (0)
