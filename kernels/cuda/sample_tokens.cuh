// Token sampling on the GPU: temperature, top-k, top-p and min-p over each
// logits row, drawing with a uniform number the host supplies per row, so
// that only token ids come back and the host keeps the CPU sampler's random
// stream (one next_uniform per sampled row, in the same order). The rule is
// the CPU sampler's (engine/src/runtime/sampler.cpp, probability_distribution
// then draw_token), with the penalties applied beforehand in place
// (kernels/cuda/penalties.cuh):
//   l = sanitize(logit)       NaN -> -FLT_MAX, +-inf clamped to +-FLT_MAX;
//   temperature 0             argmax, ties -> lowest id (u unused);
//   top-k (0 < k < vocab)     the k best by (logit desc, id asc);
//   w = exp((l - max) / T)    in float, as the CPU (here via double exp, rounded);
//   z = sum of w over the top-k set, or over the whole vocabulary;
//   top-p (< 1)               the shortest prefix, in the order below, whose
//                             sum of w reaches top_p * z;
//   min-p (> 0)               drop w < min_p (p / p_max == w);
//   p = float(w / sum)        then the first token whose running sum of p
//                             exceeds u * (sum of p), walking the order below.
// The order: by (logit desc, id asc) with top-k on; by (w desc, id asc) with
// top-k off and top-p on; by id with both off. Sums are doubles, reduced in
// a fixed tree (the CPU sums sequentially), so a draw can differ from the CPU
// only when u lands within ~1e-15 of a boundary.
//
// Tests: tests/kernels/cuda/sample_tokens_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace kvscope::cuda {

// One row's parameters (SamplingParams' fields, validated as it validates them:
// temperature >= 0 and finite, top_k >= 0, top_p in (0, 1], min_p in [0, 1]).
struct DeviceSamplingParams {
  float temperature = 1.0f;
  int32_t top_k = 0;    // 0: off
  float top_p = 1.0f;   // 1: off
  float min_p = 0.0f;   // 0: off
};

// Floats of workspace: one float per logit of each row.
size_t sample_tokens_workspace_floats(int32_t num_rows, int32_t vocab_size);

// ids[r] = the token drawn from logits[source_rows[r]] (device f32
// [..][vocab_size]; source_rows null: logits[r]) with params[r] and
// uniforms[r] in [0, 1) (device arrays [num_rows]). source_rows lets a
// backend draw for some of its logits rows without gathering them.
// Preconditions: num_rows >= 0, vocab_size >= 1, workspace_floats as sized above.
cudaError_t sample_tokens(const float* logits, int32_t num_rows, int32_t vocab_size,
                          const DeviceSamplingParams* params, const double* uniforms, float* workspace,
                          size_t workspace_floats, int32_t* ids, cudaStream_t stream,
                          const int32_t* source_rows = nullptr);

}  // namespace kvscope::cuda
