// The outputs of one matvec_q_multi launch, by value in the kernel's
// parameter space, and where row r of their concatenation lives; shared by
// the f32 kernels (matvec_q.cu) and the tensor-core ones (matvec_mma.cu).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/matvec_q.cuh"

namespace kvscope::cuda {

// The outputs of one matvec_q_multi launch, by value (kernel parameter space).
struct MultiOutputs {
  MatvecOutput out[kMaxMatvecOutputs];
  int count;
};

// Which output row r of the concatenation falls in, and its index there, by
// a loop the compiler unrolls: indexing the parameter array with a variable
// would copy it to local memory. False past the last row.
__device__ inline bool find_output(const MultiOutputs& outputs, int64_t r, MatvecOutput& o, int64_t& local) {
  bool found = false;
#pragma unroll
  for (int j = 0; j < kMaxMatvecOutputs; ++j) {
    if (!found && j < outputs.count) {
      if (r < outputs.out[j].num_rows) {
        o = outputs.out[j];
        found = true;
      } else {
        r -= outputs.out[j].num_rows;
      }
    }
  }
  local = r;
  return found;
}

// The outputs as a kernel parameter, after matvec_q_multi's preconditions
// on them (cudaErrorInvalidValue, message on stderr, when one fails).
// *total_rows: their rows together.
inline cudaError_t gather_outputs(const char* op, const MatvecOutput* outputs, int num_outputs, int64_t num_tokens,
                                  MultiOutputs* all, int64_t* total_rows) {
  KVSCOPE_CUDA_REQUIRE(op, outputs != nullptr && num_outputs >= 1 && num_outputs <= kMaxMatvecOutputs);
  *all = MultiOutputs{};
  all->count = num_outputs;
  *total_rows = 0;
  for (int j = 0; j < num_outputs; ++j) {
    const MatvecOutput& o = outputs[j];
    KVSCOPE_CUDA_REQUIRE(op, o.num_rows > 0 && o.ld >= o.num_rows);
    KVSCOPE_CUDA_REQUIRE(op, num_tokens == 0 || (o.w != nullptr && o.y != nullptr));
    KVSCOPE_CUDA_REQUIRE(op, reinterpret_cast<uintptr_t>(o.w) % 2 == 0);  // 16-bit weight loads
    all->out[j] = o;
    *total_rows += o.num_rows;
  }
  return cudaSuccess;
}

}  // namespace kvscope::cuda
