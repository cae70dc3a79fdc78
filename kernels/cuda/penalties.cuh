// Repetition / presence / frequency penalties on the GPU, in place on the
// logits rows about to be sampled there (kernels/cuda/sample_tokens.cuh), so
// that penalised sampling needs no copy of the logits on the host. The host
// lists each row's penalised tokens (the distinct ids of its window, with
// their counts: engine/src/runtime/sampler.h, penalty_entries) and the
// kernel applies the CPU sampler's formula to each, one IEEE rounding per
// operation, so the values are the CPU's bit for bit:
//   l = sanitize(logit)
//   l = l > 0 ? l / repetition : l * repetition
//   l = sanitize(l - fma(count, frequency, presence))
// Tests: tests/kernels/cuda/penalties_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvscope::cuda {

struct DevicePenalties {
  float repetition = 1.0f;  // 1: off
  float presence = 0.0f;
  float frequency = 0.0f;
};

// For each row d in [0, num_rows): the entries [entry_start[d], entry_start[d + 1])
// of ids / counts penalise logits[source_rows[d]][ids[e]] with params[d]
// (source_rows null: row d). Device arrays: logits f32 [..][vocab_size];
// source_rows, params [num_rows]; entry_start [num_rows + 1]; ids, counts
// [entry_start[num_rows]]. Preconditions: num_rows >= 0, vocab_size >= 1;
// each row's ids distinct and in [0, vocab_size); no source row twice.
cudaError_t apply_penalties(float* logits, int32_t num_rows, int32_t vocab_size, const int32_t* source_rows,
                            const DevicePenalties* params, const int32_t* entry_start, const int32_t* ids,
                            const float* counts, cudaStream_t stream);

}  // namespace kvscope::cuda
