// Quantised / float matmul for the CPU backend: y = W x for a batch of tokens.
//
// Quantised weights (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): each activation row is
// first quantised to 8-bit blocks of 32 (f32 scale d and s = d * sum(q), like
// llama.cpp's Q8_1) and dot products run on integers (AVX-512 VNNI vpdpbusd,
// or AVX2 maddubs). K-quants are dequantised one row tile at a time to f32 and
// multiplied like F32 weights here (the model's matmuls go through
// matmul_packed, which runs them on integer kernels: kquant_packed.h).
// F32/F16/BF16 weights use f32 activations + FMA.
//
// Invariance (docs/architecture.md): work is split over output rows only, and every
// output element is accumulated in the same order whatever num_tokens, the
// other rows of x, the thread count or the tile it falls in. Results differ
// between CPU levels (cpu_features.h), never within one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor_type.h"

namespace kvscope {

// Reusable buffers for one caller (holds the quantised activations). Not
// shared between concurrent matmul calls.
class MatmulScratch {
 public:
  // A 64-byte aligned buffer of at least `bytes` bytes; contents unspecified.
  void* get(size_t bytes);

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  size_t capacity_ = 0;
};

// w: [num_rows][row_len] of wtype (rows of row_bytes(wtype, row_len) bytes);
// x: [num_tokens][row_len] f32; y: [num_tokens][num_rows],
// y[t * num_rows + r] = dot(w row r, x row t).
// Preconditions: is_supported_weight_type(wtype); row_len a multiple of the
// type's block size.
void matmul(TensorType wtype, const void* w, int64_t num_rows, int64_t row_len, const float* x,
            int64_t num_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch);

}  // namespace kvscope
