// Token draws on the host: what StepBatch::draws ask of a backend, done with
// the engine's own sampler functions (runtime/sampler.h). The CPU backend
// draws through it; the GPU's kernels (kernels/cuda/penalties.cuh,
// sample_tokens.cuh) implement the same rule, and the GPU tests hold them
// to it.
//   tested by tests/engine/runtime/token_draw_test.cpp
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/thread_pool.h"
#include "kvscope/sampling_params.h"
#include "runtime/sampler.h"
#include "runtime/step_batch.h"

namespace kvscope {

// The SamplingParams a draw stands for (penalty window and seed aside: the
// draw carries its penalised tokens and its random number).
SamplingParams draw_params(const TokenDraw& draw);

// The TokenDraw for logits row `logits_row` of a sequence sampled with
// `params`, drawing with `uniform`.
TokenDraw make_draw(int32_t logits_row, const SamplingParams& params, double uniform);

// Appends that draw to `batch` with its penalised tokens: the distinct ids of
// the penalty window of `recent_tokens` (prompt + generated so far) inside
// [0, vocab_size), as Sampler::sample would penalise them.
void append_token_draw(StepBatch& batch, int32_t logits_row, const SamplingParams& params,
                       std::span<const int32_t> recent_tokens, int32_t vocab_size, double uniform);

// drawn[d] = the token draw d of `batch` picks from its row of `logits`
// ([batch.logits_rows.size()][vocab_size]), exactly as Sampler::sample would
// with the same penalties and random number; -1 where that row is not finite
// (logits_not_finite). With `threads`, the draws are
// spread over its threads (each draw is independent, so the tokens are the
// same); at a large vocabulary a row's draw costs a fraction of a
// millisecond, which at dozens of sequences is a noticeable part of a step.
void draw_tokens_on_host(const StepBatch& batch, const float* logits, int32_t vocab_size, std::vector<int32_t>& drawn,
                         ThreadPool* threads = nullptr);

}  // namespace kvscope
