// LinearGroup: weight matrices that read the same input (Q|K|V, gate|up, or
// one matrix alone), repacked once at load time for the fastest matmul kernel
// and run as one: their outputs land side by side, y[t][part0 rows, part1 rows,
// ...]. One call quantises the input once and dispatches the thread pool once
// (also when the parts differ in type: matmul_packed_stacked), which matters
// at decode, where each matmul is only microseconds of work and each
// dispatch is a barrier. The RMSNorm of the input can be folded into that
// quantisation (run's norm), so the normed rows are never written.
//
// A K range packs only the columns [k_begin, k_begin + k_size) of every row
// (a row-parallel slice for tensor parallelism, or one canonical chunk of
// the deterministic reduction): the slice is gathered into a contiguous
// copy, packed, and the copy dropped once the packed layout holds it.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/thread_pool.h"
#include "model/model_weights.h"

namespace kvscope {

class LinearGroup {
 public:
  LinearGroup() = default;
  // Precondition: every part is present and has the same row_len.
  explicit LinearGroup(const std::vector<const WeightMatrix*>& parts);
  // Columns [k_begin, k_begin + k_size) of every part only. Preconditions: as
  // above, and the range lies in the row and starts and ends on a block of
  // every part's type.
  LinearGroup(const std::vector<const WeightMatrix*>& parts, int64_t k_begin, int64_t k_size);

  int64_t num_rows() const { return num_rows_; }  // total output width
  int64_t row_len() const { return row_len_; }    // input width (k_size with a K range)
  // x: [num_tokens][row_len()]; y: [num_tokens][num_rows()]. With a norm
  // (weight [row_len()]), y = W rms_norm(x), bitwise as if x had been normed
  // by rms_norm() first.
  void run(const float* x, int32_t num_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch,
           const RowNorm* norm = nullptr);

 private:
  // One packed weight when all parts share a type (the usual case); else one
  // per part, whose outputs are scattered into the stacked layout.
  std::vector<PackedWeight> packed_;
  std::vector<int64_t> part_rows_;
  int64_t num_rows_ = 0;
  int64_t row_len_ = 0;
  // Every part in the packed layout: one matmul_packed_stacked call (else
  // matmul_packed per part).
  bool all_packed_ = false;
  std::vector<const PackedWeight*> stacked_;  // &packed_[i], refreshed per run (the group may have moved)
  std::vector<float> part_out_;  // [num_tokens][part rows], for the per-part case
};

}  // namespace kvscope
