// SamplingParams: how one request turns logits into tokens. A plain struct,
// filled from the command line, a settings page or an API request, checked once
// with validate() at that boundary, then handed to a Sampler
// (engine/src/runtime/sampler.h), which trusts it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvscope/result.h"

namespace kvscope {

class Grammar;  // kvscope/json_constraint.h

// SamplingParams::seed 0 means "pick a random seed"; where a seed must be
// an ordinary number that happens to be 0 (an OpenAI client's seed 0, or a
// parallel-sampling sibling whose seed + index wraps around to 0), this one
// is drawn with instead, so the text stays reproducible.
inline constexpr uint64_t kSeedStandingForZero = 0x9e3779b97f4a7c15ull;

struct SamplingParams {
  float temperature = 0.8f;         // 0: greedy (argmax, ties -> lowest id)
  int32_t top_k = 40;               // keep the k most likely tokens; 0: off
  float top_p = 0.95f;              // nucleus: smallest set with cumulative p >= top_p; 1: off
  float min_p = 0.05f;              // drop tokens with p < min_p * p_max; 0: off
  float repetition_penalty = 1.0f;  // llama.cpp style: logit > 0 divided, else multiplied; 1: off
  int32_t repeat_last_n = 64;       // penalty window over recent tokens; 0: off, -1: all given
  float presence_penalty = 0.0f;    // subtracted once from every token seen in the window
  float frequency_penalty = 0.0f;   // subtracted per occurrence in the window
  uint64_t seed = 0;                // 0: pick a random seed (RequestStats::seed reports it; the CLI's -1 means 0)
  int32_t max_tokens = 256;         // generated tokens at most; 0: the prompt runs (and is scored), nothing is sampled
  std::vector<std::string> stop;    // stop strings (not part of the output)
  bool ignore_eos = false;          // keep generating past end-of-sequence
  // Grammar-constrained decoding (kvscope/json_constraint.h, docs/json-schema.md):
  // only tokens that keep the output a prefix of a value the grammar accepts,
  // end-of-sequence only once it is complete. Null: unconstrained. Shared by
  // the request's sequences; each keeps its own position in it.
  std::shared_ptr<const Grammar> constraint;

  // Ok, or a message naming the first out-of-range field, its allowed range and
  // the value given, e.g. "top_p must be in (0, 1], got 1.5".
  Status validate() const;
};

}  // namespace kvscope
