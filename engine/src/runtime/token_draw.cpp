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

void draw_tokens_on_host(const StepBatch& batch, const float* logits, int32_t vocab_size, SamplerScratch& scratch,
                         std::vector<TokenProb>& distribution, std::vector<int32_t>& drawn) {
  drawn.resize(batch.draws.size());
  std::vector<PenaltyEntry> penalties;
  for (size_t d = 0; d < batch.draws.size(); ++d) {
    const TokenDraw& draw = batch.draws[d];
    penalties.clear();
    for (int32_t e = batch.penalty_start[d]; e < batch.penalty_start[d + 1]; ++e)
      penalties.push_back({batch.penalty_ids[static_cast<size_t>(e)], batch.penalty_counts[static_cast<size_t>(e)]});
    const SamplingParams params = draw_params(draw);
    const float* row = logits + static_cast<size_t>(draw.logits_row) * static_cast<size_t>(vocab_size);
    probability_distribution(row, vocab_size, params, std::span<const PenaltyEntry>(penalties), scratch,
                             distribution);
    drawn[d] = params.temperature == 0.0f ? distribution.front().first : draw_token(distribution, draw.uniform);
  }
}

}  // namespace kvscope
