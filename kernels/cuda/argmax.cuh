// Greedy sampling on the GPU: the argmax of each logits row, so only token
// ids come back to the host. Ties go to the lowest id, as the CPU sampler's
// greedy path does (engine/src/runtime/sampler.cpp); NaN never wins. Tested by
// tests/kernels/cuda/argmax_test.cpp. Top-k / top-p / min-p are not here yet.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvscope::cuda {

// ids[r] = the lowest i with logits[r][i] == max_i logits[r][i] (NaN ignored;
// -1 when every value of the row is NaN).
// logits: [num_rows][vocab_size] device f32; ids: [num_rows] device int32.
// Preconditions: 0 < vocab_size <= INT32_MAX, num_rows >= 0.
cudaError_t argmax_rows(const float* logits, int64_t num_rows, int64_t vocab_size, int32_t* ids,
                        cudaStream_t stream);

}  // namespace kvscope::cuda
