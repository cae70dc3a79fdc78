// Penalty kernel; see penalties.cuh. One block per row, a thread per entry:
// the entries of a row name distinct tokens, so no two threads write the
// same logit, and each value depends on its own entry alone.
#include "kernels/cuda/penalties.cuh"

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads)
    penalties_kernel(float* logits, int32_t n, const int32_t* source_rows, const DevicePenalties* params,
                     const int32_t* entry_start, const int32_t* ids, const float* counts) {
  await_previous_kernel();
  const int32_t d = static_cast<int32_t>(blockIdx.x);
  const int64_t source = source_rows != nullptr ? source_rows[d] : d;
  float* row = logits + source * n;
  const DevicePenalties p = params[d];
  for (int32_t e = entry_start[d] + static_cast<int32_t>(threadIdx.x); e < entry_start[d + 1]; e += kThreads) {
    float& logit = row[ids[e]];
    const float l = sanitize(logit);
    const float scaled = l > 0.0f ? __fdiv_rn(l, p.repetition) : __fmul_rn(l, p.repetition);
    logit = sanitize(__fsub_rn(scaled, __fmaf_rn(counts[e], p.frequency, p.presence)));
  }
}

}  // namespace

cudaError_t apply_penalties(float* logits, int32_t num_rows, int32_t vocab_size, const int32_t* source_rows,
                            const DevicePenalties* params, const int32_t* entry_start, const int32_t* ids,
                            const float* counts, cudaStream_t stream) {
  const char* op = "apply_penalties";
  KVSCOPE_CUDA_REQUIRE(op, num_rows >= 0);
  KVSCOPE_CUDA_REQUIRE(op, vocab_size >= 1);
  if (num_rows == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, logits != nullptr && params != nullptr && entry_start != nullptr);
  launch_kernel(penalties_kernel, static_cast<unsigned int>(num_rows), kThreads, 0, stream, logits, vocab_size,
                source_rows, params, entry_start, ids, counts);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
