// Sampler: turns one row of logits into the next token id, per request.
//
// Pipeline (the order matters; each step says why it sits where it does):
//   1. penalties      repetition / presence / frequency over the last
//                     repeat_last_n recent tokens (llama.cpp semantics: a
//                     positive logit is divided by repetition_penalty, a
//                     negative one multiplied; then count * frequency_penalty
//                     + presence_penalty is subtracted). First, because they
//                     correct the model's raw preference and greedy decoding
//                     must see them too.
//   2. greedy         temperature == 0: argmax, ties -> lowest id. Nothing after
//                     this point changes the argmax, so greedy stops here.
//   3. top-k          keep the k highest logits (ties -> lower ids). Before
//                     temperature because dividing by T > 0 keeps the order, and
//                     cutting first leaves k candidates instead of the vocab.
//   4. temperature    logits / T, then softmax over what is left.
//   5. top-p          smallest prefix (by descending p) whose cumulative p >=
//                     top_p, at least one token. After temperature so that
//                     "95% of the mass" means mass of the distribution actually
//                     drawn from (the Hugging Face / vLLM convention).
//   6. min-p          drop tokens with p < min_p * p_max. p / p_max is unchanged
//                     by renormalising, so the order of 5 and 6 does not matter.
//   7. renormalise, draw with one uniform number from a seeded std::mt19937_64.
//
// probability_distribution() returns the distribution of step 7; sample() draws
// from exactly that distribution (both run the same code). Speculative decoding's
// rejection sampler uses it to read p(token).
//
// Cost at vocab 262144: one copy of the logits (penalties need a writable row),
// then a heap scan for small top_k, nth_element for large top_k, and with top_k
// off a histogram of the mass by log-weight that finds roughly where top-p
// cuts, so only tokens above that point (and above min-p's cut) are sorted.
// No full sort of the vocabulary. Greedy without penalties reads the row in
// place (one vectorised pass for the max, one for its first position), since
// the copy was most of its cost.
//
// Grammar-constrained decoding (params.constraint): the Sampler holds the
// sequence's TokenConstraint (constrain/token_constraint.h); the engine step
// passes rows masked by it, forbidden tokens at -inf. Those are sanitised to
// -FLT_MAX below, stay there through the penalties, and get weight 0 after
// softmax, so they are never drawn, greedy included.
//
// Non-finite logits are tolerated: NaN counts as -inf, +/-inf are clamped to
// +/-FLT_MAX, so a row of all -inf gives a uniform distribution instead of NaNs.
//
// Tests: tests/engine/runtime/sampler_test.cpp (ctest -L unit -R sampler).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "constrain/token_constraint.h"
#include "kvscope/result.h"
#include "kvscope/sampling_params.h"

namespace kvscope {

// (token id, probability or log-probability), see each function.
using TokenProb = std::pair<int32_t, float>;

// One penalised token of a row: its id and how often it occurs in the window.
struct PenaltyEntry {
  int32_t id = 0;
  float count = 0.0f;
};

// Reused buffers, so that a Sampler allocates only on its first call.
struct SamplerScratch {
  std::vector<float> logits;           // [vocab] penalised, sanitised copy of the row
  std::vector<int32_t> window;         // [<= repeat_last_n] recent tokens, sorted
  std::vector<PenaltyEntry> penalties; // the window's distinct ids and counts
  std::vector<TokenProb> candidates;   // [num_candidates] (id, logit, later weight)
  std::vector<double> mass_per_bucket; // [1024] top-p's weight histogram (sampler.cpp)
};

// The final distribution the sampler draws from: (id, p) with p > 0 for at least
// one entry and the p summing to 1 (up to float rounding). Order: descending p
// (ties -> lower id) when top-k (0 < k < vocab) or top-p (< 1) is on; otherwise
// ascending id.
// Greedy gives one entry with p = 1. Preconditions: params.validate().ok(),
// vocab_size >= 1; recent ids outside [0, vocab_size) are ignored.
std::vector<TokenProb> probability_distribution(const float* logits, int32_t vocab_size,
                                                const SamplingParams& params,
                                                std::span<const int32_t> recent_tokens);

// Same, into `out`, reusing `scratch` (what Sampler uses).
void probability_distribution(const float* logits, int32_t vocab_size,
                              const SamplingParams& params,
                              std::span<const int32_t> recent_tokens, SamplerScratch& scratch,
                              std::vector<TokenProb>& out);

// Same, with the penalties given as entries (penalty_entries below) instead of
// recent tokens: what a backend that draws tokens itself (StepBatch::draws) is
// handed, so that it applies exactly these. Preconditions as above, and each
// entry's id in [0, vocab_size), each id at most once.
void probability_distribution(const float* logits, int32_t vocab_size, const SamplingParams& params,
                              std::span<const PenaltyEntry> penalties, SamplerScratch& scratch,
                              std::vector<TokenProb>& out);

// Whether any of repetition / presence / frequency penalty is on.
bool penalties_on(const SamplingParams& params);

// Step 1's inputs: the distinct ids of the last repeat_last_n recent tokens
// that lie in [0, vocab_size), ascending, with their counts; empty when no
// penalty is on. window: scratch for the sorted tail.
void penalty_entries(const SamplingParams& params, std::span<const int32_t> recent_tokens, int32_t vocab_size,
                     std::vector<int32_t>& window, std::vector<PenaltyEntry>& out);

// Step 1 for one token: a sanitised logit seen `count` times becomes
//   l = logit > 0 ? logit / repetition_penalty : logit * repetition_penalty
//   l = l - fma(count, frequency_penalty, presence_penalty), sanitised.
// Every operation is one IEEE rounding, so the GPU's penalty kernel
// (kernels/cuda/penalties.cuh) gets the same bits.
float penalised_logit(float logit, float count, const SamplingParams& params);

// The token of `d` at u in [0, 1) by the inverse CDF over d in its own order
// (entries with p == 0 are never drawn): the draw sample() makes with its
// uniform number. Speculative verification relies on it (spec/rejection_sampler.h).
// Precondition: d is not empty.
int32_t draw_token(std::span<const TokenProb> d, double u);

// Whether a row of logits holds a NaN or an infinity: a healthy model's are
// finite (NaN means weights that hold NaN, or arithmetic that overflowed),
// and the sampler, which reads NaN as -inf, would otherwise draw from what is
// left, or token 0 from a row of nothing but NaN, as if the model had said it.
bool logits_not_finite(const float* logits, int32_t n);

// log softmax(logits)[id] at temperature 1, no penalties. Precondition: 0 <= id < n.
float log_softmax_of(const float* logits, int n, int32_t id);

// The min(k, n) most likely tokens as (id, log-probability at temperature 1, no
// penalties), by descending logit, ties -> lower id. For --json top_logprobs and
// tests. k <= 0 gives an empty vector.
std::vector<TokenProb> top_n(const float* logits, int n, int k);

class Sampler {
 public:
  // Validates params; the error names the bad field.
  static Result<Sampler> create(const SamplingParams& params);

  // Precondition: params.validate().ok() (asserted). params.seed == 0 picks a
  // random non-zero seed, reported by seed().
  explicit Sampler(const SamplingParams& params);

  // The next token id in [0, vocab_size). recent_tokens: prompt + generated so
  // far, oldest first (only the last repeat_last_n are read). Every non-greedy
  // call consumes exactly one random number, so the n-th draw of a seed does not
  // depend on the shapes of earlier distributions.
  int32_t sample(const float* logits, int32_t vocab_size, std::span<const int32_t> recent_tokens);

  // The random number the next non-greedy sample() would use, consumed: for a
  // backend that draws the token itself (StepBatch::draws), so that the
  // sequence's stream of draws is the same wherever they are made.
  double take_uniform();

  // The distribution the last sample() call drew from (empty before the
  // first); a token drawn by a backend leaves it as it was.
  const std::vector<TokenProb>& last_distribution() const { return distribution_; }

  // The seed in use: params.seed, or the one picked when that was 0. Passing it
  // back as params.seed reproduces the same tokens.
  uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }

  // The sequence's grammar state when params.constraint is set, else null.
  TokenConstraint* constraint() { return constraint_ ? &*constraint_ : nullptr; }
  bool constrained() const { return constraint_.has_value(); }

 private:
  SamplingParams params_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  SamplerScratch scratch_;
  std::vector<TokenProb> distribution_;  // [num_candidates]
  std::optional<TokenConstraint> constraint_;
};

}  // namespace kvscope
