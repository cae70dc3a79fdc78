#include "runtime/token_draw.h"

namespace kvscope {

SamplingParams draw_params(const TokenDraw& draw) {
  SamplingParams p;
  p.temperature = draw.temperature;
  p.top_k = draw.top_k;
  p.top_p = draw.top_p;
  p.min_p = draw.min_p;
  p.repetition_penalty = draw.repetition_penalty;
  p.presence_penalty = draw.presence_penalty;
  p.frequency_penalty = draw.frequency_penalty;
  return p;
}

TokenDraw make_draw(int32_t logits_row, const SamplingParams& params, double uniform) {
  TokenDraw d;
  d.logits_row = logits_row;
  d.temperature = params.temperature;
  d.top_k = params.top_k;
  d.top_p = params.top_p;
  d.min_p = params.min_p;
  d.repetition_penalty = params.repetition_penalty;
  d.presence_penalty = params.presence_penalty;
  d.frequency_penalty = params.frequency_penalty;
  d.uniform = uniform;
  return d;
}

void append_token_draw(StepBatch& batch, int32_t logits_row, const SamplingParams& params,
                       std::span<const int32_t> recent_tokens, int32_t vocab_size, double uniform) {
  thread_local std::vector<int32_t> window, ids;
  thread_local std::vector<PenaltyEntry> entries;
  thread_local std::vector<float> counts;
  penalty_entries(params, recent_tokens, vocab_size, window, entries);
  ids.clear();
  counts.clear();
  for (const PenaltyEntry& e : entries) {
    ids.push_back(e.id);
    counts.push_back(e.count);
  }
  batch.add_draw(make_draw(logits_row, params, uniform), ids, counts);
}

namespace {

// One draw, with this thread's buffers.
int32_t draw_one(const StepBatch& batch, size_t d, const float* logits, int32_t vocab_size) {
  thread_local SamplerScratch scratch;
  thread_local std::vector<TokenProb> distribution;
  thread_local std::vector<PenaltyEntry> penalties;
  const TokenDraw& draw = batch.draws[d];
  penalties.clear();
  for (int32_t e = batch.penalty_start[d]; e < batch.penalty_start[d + 1]; ++e)
    penalties.push_back({batch.penalty_ids[static_cast<size_t>(e)], batch.penalty_counts[static_cast<size_t>(e)]});
  const SamplingParams params = draw_params(draw);
  const float* row = logits + static_cast<size_t>(draw.logits_row) * static_cast<size_t>(vocab_size);
  if (logits_not_finite(row, vocab_size)) return -1;  // the engine finishes it with an error
  probability_distribution(row, vocab_size, params, std::span<const PenaltyEntry>(penalties), scratch, distribution);
  return params.temperature == 0.0f ? distribution.front().first : draw_token(distribution, draw.uniform);
}

}  // namespace

void draw_tokens_on_host(const StepBatch& batch, const float* logits, int32_t vocab_size, std::vector<int32_t>& drawn,
                         ThreadPool* threads) {
  drawn.resize(batch.draws.size());
  auto draw_range = [&](int64_t begin, int64_t end) {
    for (int64_t d = begin; d < end; ++d)
      drawn[static_cast<size_t>(d)] = draw_one(batch, static_cast<size_t>(d), logits, vocab_size);
  };
  if (threads && threads->num_threads() > 1 && drawn.size() > 1) {
    threads->parallel_for(static_cast<int64_t>(drawn.size()), draw_range);
  } else {
    draw_range(0, static_cast<int64_t>(drawn.size()));
  }
}

}  // namespace kvscope
