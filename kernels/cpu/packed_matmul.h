// Weights repacked once at load time for the row-interleaved AVX-512 VNNI
// matmul, and matmul_packed() that multiplies with them.
//
// Why: matmul() on the original GGUF blocks spends most of its instructions
// per 64 weights unpacking nibbles, converting f16 scales, placing them and
// reducing horizontally. The packed layout stores 16 rows side by side (lane i
// of every zmm = row i), scales already as f32, so the kernel is vpdpbusd +
// one convert and two FMAs per 32 elements, 16 rows and token, and the 16
// results of a row group are one vector store: no horizontal reductions.
//
// Several matrices of the same type and row_len can be stacked by rows (Q|K|V,
// gate|up) into one PackedWeight: one call, one activation quantisation.
//
// Invariance (docs/architecture.md): like matmul(), every output element is
// accumulated in one fixed order whatever num_tokens, its neighbours, the row
// group or part it falls in, or the thread count. Tested by
// tests/kernels/packed_matmul_test.cpp; timed by kernel_bench.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor_type.h"

namespace kvscope {

// One matrix to stack: data points at num_rows rows in the PackedWeight's type.
struct WeightPart {
  const void* data = nullptr;
  int64_t num_rows = 0;
};

// A weight matrix (or several with the same type and row_len, stacked by
// rows) in the layout the fastest kernel for this CPU wants. Move-only.
class PackedWeight {
 public:
  PackedWeight() = default;

  // Packs `parts` (all of `type`, row_len elements per row), stacked in order.
  // Q4_0, Q4_1 and Q8_0 at CpuLevel::kAvx512, and Q5_0, Q5_1, Q2_K, Q3_K,
  // Q4_K, Q5_K and Q6_K at kAvx2 or kAvx512 (the level in effect now, see
  // cpu_features.h), are copied into the interleaved layout. Any other type
  // or level copies the parts as they are and matmul_packed() runs matmul()
  // per part. Either way the originals may be freed: a model file mapped
  // into memory is not read again, so a file truncated or overwritten while
  // it is loaded cannot fault a step (a read of a page cut from a mapping is
  // SIGBUS).
  // Preconditions: is_supported_weight_type(type); row_len a positive multiple
  // of the type's block size; every part's num_rows >= 0.
  static PackedWeight pack(TensorType type, int64_t row_len, std::span<const WeightPart> parts);

  TensorType type() const { return type_; }
  int64_t row_len() const { return row_len_; }
  int64_t num_rows() const { return num_rows_; }  // all parts together
  // True when the interleaved copy is used (else matmul() per part).
  bool is_packed() const { return packed_ != nullptr; }
  // Bytes held by the interleaved copy (0 when not packed).
  size_t packed_bytes() const { return packed_bytes_; }

 private:
  friend void matmul_packed(const PackedWeight& w, const float* x, int64_t num_tokens, float* y,
                            ThreadPool& pool, MatmulScratch& scratch);
  friend void matmul_packed_stacked(std::span<const PackedWeight* const> ws, const float* x, int64_t num_tokens,
                                    float* y, ThreadPool& pool, MatmulScratch& scratch, const RowNorm* norm);
  struct Free {
    void operator()(uint8_t* p) const;
  };
  // Q2_K..Q6_K (detail::is_packed_kquant): layout kquant_packed.h.
  static void pack_kquant(TensorType type, int64_t row_len, std::span<const WeightPart> parts, PackedWeight* pw);
  // matmul_packed_stacked for at most 4 weights, into y with row stride y_stride.
  static void run_stacked(std::span<const PackedWeight* const> ws, const float* x, int64_t num_tokens, float* y,
                          int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch, const RowNorm* norm);

  TensorType type_ = TensorType::F32;
  int64_t row_len_ = 0;
  int64_t num_rows_ = 0;
  std::vector<WeightPart> parts_;  // into part_copies_, used when !is_packed()
  std::unique_ptr<uint8_t, Free> part_copies_;  // the parts' bytes, stacked, when !is_packed()
  std::unique_ptr<uint8_t, Free> packed_;  // [num_groups][num_blocks][block bytes], 64-byte aligned
  size_t packed_bytes_ = 0;
};

// x: [num_tokens][w.row_len()] f32; y: [num_tokens][w.num_rows()],
// y[t * w.num_rows() + r] = dot(stacked row r, x row t). Same invariance rules
// as matmul(); results equal matmul() on each part only on the fallback path.
void matmul_packed(const PackedWeight& w, const float* x, int64_t num_tokens, float* y, ThreadPool& pool,
                   MatmulScratch& scratch);

// Several packed weights that read the same x, run as one: y: [num_tokens]
// [sum of num_rows()], each weight's outputs side by side in order, as if
// they were one stacked PackedWeight. Why: weights of different types cannot
// share a PackedWeight (Q|K|V of a Q4_K_M file, with V in Q8_0 and Q, K in
// Q5_0), and a matmul_packed() per weight costs one thread hand-off each, a
// barrier that at decode costs more than a small matrix. Here x is quantised
// once (one s_x copy per distinct type offset) and every weight's row groups
// go into one parallel_for. Every output element's arithmetic is the one
// matmul_packed() does for that weight alone: bitwise the same results.
// With a norm, x is read as rms_norm(x, norm->weight, ..., norm->eps) would
// have written it (rms_norm.h RowNorm): bitwise the result of running on the
// normed rows, without writing them. norm->weight: [row_len].
// Preconditions: every weight is_packed(), all with the same row_len.
void matmul_packed_stacked(std::span<const PackedWeight* const> ws, const float* x, int64_t num_tokens, float* y,
                           ThreadPool& pool, MatmulScratch& scratch, const RowNorm* norm = nullptr);

}  // namespace kvscope
