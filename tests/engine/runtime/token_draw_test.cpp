// Token draws on the host (runtime/token_draw.h), the rule a backend that
// samples itself must follow (label `unit`):
//  - a draw made from StepBatch::draws with the sequence's next random number
//    is the token Sampler::sample draws, over random rows, penalties and every
//    combination of top-k / top-p / min-p / greedy;
//  - penalty_entries lists the window's distinct in-vocabulary ids with
//    their counts, and penalised_logit is the documented formula.
#include "runtime/token_draw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace kvscope {
namespace {

SamplingParams params_for(int variant, uint64_t seed) {
  SamplingParams p;
  p.seed = seed;
  p.temperature = variant % 5 == 0 ? 0.0f : 0.3f + 0.25f * static_cast<float>(variant % 4);
  p.top_k = variant % 3 == 0 ? 0 : 7 + variant;
  p.top_p = variant % 2 == 0 ? 1.0f : 0.85f;
  p.min_p = variant % 4 == 1 ? 0.0f : 0.05f;
  p.repetition_penalty = variant % 3 == 1 ? 1.0f : 1.3f;
  p.presence_penalty = variant % 2 == 0 ? 0.0f : 0.4f;
  p.frequency_penalty = variant % 4 == 3 ? 0.0f : 0.35f;
  p.repeat_last_n = variant % 6 == 0 ? -1 : 16;
  return p;
}

TEST(TokenDrawTest, HostDrawIsTheSamplersTokenWithTheSameRandomNumber) {
  constexpr int32_t kVocab = 301;  // odd, and more than any top_k used
  std::mt19937 rng(5);
  std::normal_distribution<float> logit(0.0f, 2.5f);
  int num_compared = 0, num_penalised = 0;
  for (int variant = 0; variant < 24; ++variant) {
    const SamplingParams params = params_for(variant, 100 + variant);
    Sampler reference(params), drawing(params);
    std::vector<int32_t> recent;
    for (int i = 0; i < 40; ++i) recent.push_back(static_cast<int32_t>(rng() % 30));  // repeats
    recent.push_back(kVocab + 3);  // outside the vocabulary: ignored
    for (int step = 0; step < 12; ++step) {
      // Three rows in the batch; the draw is for the middle one.
      std::vector<float> logits(3 * kVocab);
      for (float& l : logits) l = logit(rng);
      // A NaN in the drawn row: the draw says -1 (the engine ends such a
      // request with an error, engine_step.cpp), not the token the sampler,
      // reading NaN as -inf, would pick. A NaN in another row changes nothing.
      const bool nan_in_row = step % 4 == 1;
      if (nan_in_row) logits[kVocab + 7] = std::nanf("");
      if (step % 4 == 2) logits[2 * kVocab + 7] = std::nanf("");
      const int32_t expected = reference.sample(logits.data() + kVocab, kVocab, recent);

      StepBatch batch;
      batch.clear();
      batch.logits_rows = {0, 1, 2};
      const double u = params.temperature == 0.0f ? 0.0 : drawing.take_uniform();
      append_token_draw(batch, 1, params, recent, kVocab, u);
      num_penalised += !batch.penalty_ids.empty();
      std::vector<int32_t> drawn;
      draw_tokens_on_host(batch, logits.data(), kVocab, drawn);
      ASSERT_EQ(drawn.size(), 1u);
      EXPECT_EQ(drawn[0], nan_in_row ? -1 : expected) << "variant " << variant << " step " << step;
      ++num_compared;
      recent.push_back(expected);
    }
  }
  EXPECT_EQ(num_compared, 24 * 12);
  EXPECT_GT(num_penalised, 100);  // the penalties were exercised, not skipped
}

// Many draws in one batch, spread over threads: each the sampler's token.
TEST(TokenDrawTest, DrawsOverThreadsAreEachTheSamplersToken) {
  constexpr int32_t kVocab = 1001, kRows = 41;
  std::mt19937 rng(6);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(kRows) * kVocab);
  for (float& l : logits) l = logit(rng);
  StepBatch batch;
  batch.clear();
  for (int32_t r = 0; r < kRows; ++r) batch.logits_rows.push_back(r);
  std::vector<int32_t> expected;
  std::vector<int32_t> recent = {5, 5, 9, 1000, 3, 5};
  for (int32_t r = kRows - 1; r >= 0; r -= 2) {  // every other row, in reverse
    const SamplingParams params = params_for(r, 300 + static_cast<uint64_t>(r));
    Sampler reference(params), drawing(params);
    expected.push_back(reference.sample(logits.data() + static_cast<size_t>(r) * kVocab, kVocab, recent));
    append_token_draw(batch, r, params, recent, kVocab, params.temperature == 0.0f ? 0.0 : drawing.take_uniform());
  }
  std::vector<int32_t> alone, threaded;
  draw_tokens_on_host(batch, logits.data(), kVocab, alone);
  ThreadPool threads(3);
  draw_tokens_on_host(batch, logits.data(), kVocab, threaded, &threads);
  EXPECT_EQ(alone, expected);
  EXPECT_EQ(threaded, expected);
}

TEST(TokenDrawTest, PenaltyEntriesAreTheWindowsDistinctTokensWithCounts) {
  SamplingParams p;
  p.repetition_penalty = 1.1f;
  p.repeat_last_n = 5;
  const std::vector<int32_t> recent = {9, 9, 9, 4, 2, 4, 7, 4, 50};
  std::vector<int32_t> window;
  std::vector<PenaltyEntry> entries;
  penalty_entries(p, recent, /*vocab_size=*/10, window, entries);  // last 5: 2 4 7 4 50
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].id, 2);
  EXPECT_EQ(entries[0].count, 1.0f);
  EXPECT_EQ(entries[1].id, 4);
  EXPECT_EQ(entries[1].count, 2.0f);
  EXPECT_EQ(entries[2].id, 7);

  p.repetition_penalty = 1.0f;  // no penalty on: nothing to apply
  penalty_entries(p, recent, 10, window, entries);
  EXPECT_TRUE(entries.empty());
  p.presence_penalty = 0.5f;
  p.repeat_last_n = 0;  // window off
  penalty_entries(p, recent, 10, window, entries);
  EXPECT_TRUE(entries.empty());
}

TEST(TokenDrawTest, PenalisedLogitIsTheDocumentedFormula) {
  SamplingParams p;
  p.repetition_penalty = 1.5f;
  p.presence_penalty = 0.25f;
  p.frequency_penalty = 0.1f;
  EXPECT_EQ(penalised_logit(3.0f, 2.0f, p), 3.0f / 1.5f - std::fma(2.0f, 0.1f, 0.25f));
  EXPECT_EQ(penalised_logit(-3.0f, 1.0f, p), -3.0f * 1.5f - std::fma(1.0f, 0.1f, 0.25f));
  EXPECT_EQ(penalised_logit(-std::numeric_limits<float>::max(), 3.0f, p), -std::numeric_limits<float>::max());
}

}  // namespace
}  // namespace kvscope
