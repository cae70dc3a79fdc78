// LinearGroup: weight matrices that read the same input (Q|K|V, gate|up, or
// one matrix alone), repacked once at load time for the fastest matmul kernel
// and run as one: their outputs land side by side, y[t][part0 rows, part1 rows,
// ...]. One call quantises the input once and dispatches the thread pool once,
// which matters at decode, where each matmul is only microseconds of work.
#pragma once

#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_matmul.h"
#include "kernels/cpu/thread_pool.h"
#include "model/model_weights.h"

namespace kvscope {

class LinearGroup {
 public:
  LinearGroup() = default;
  // Precondition: every part is present and has the same row_len.
  explicit LinearGroup(const std::vector<const WeightMatrix*>& parts);

  int64_t num_rows() const { return num_rows_; }  // total output width
  // x: [num_tokens][row_len]; y: [num_tokens][num_rows()].
  void run(const float* x, int32_t num_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch);

 private:
  // One packed weight when all parts share a type (the usual case); else one
  // per part, whose outputs are scattered into the stacked layout.
  std::vector<PackedWeight> packed_;
  std::vector<int64_t> part_rows_;
  int64_t num_rows_ = 0;
  std::vector<float> part_out_;  // [num_tokens][part rows], for the per-part case
};

}  // namespace kvscope
