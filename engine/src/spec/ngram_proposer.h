// NgramProposer: prompt lookup. If the last few tokens of a sequence occurred
// earlier in it (in the prompt or in what it generated), guess that what
// followed them then follows them again. No model, no state: it pays when a
// reply copies from its input (summarise, rewrite or edit a given text or
// code) or repeats itself, and finds nothing to propose in free text.
//
// Rule, for match lengths n = max_match down to min_match (longest first):
// take the last n tokens; among their earlier occurrences (overlaps allowed,
// the suffix itself excluded) pick the most recent one followed by at least
// k tokens, else the earliest one (it is followed by the most); propose the
// up to k tokens that follow it. No occurrence at any length: nothing.
//
// Cost: O(len * max_match) per call in the worst case (no match), a few
// microseconds for thousands of tokens, against milliseconds per forward pass.
//
// Tests: tests/engine/runtime/ngram_proposer_test.cpp.
#pragma once

#include "spec/proposer.h"

namespace kvscope {

class NgramProposer final : public Proposer {
 public:
  // Precondition: 1 <= min_match <= max_match (EngineConfig::validate checks it).
  NgramProposer(int32_t min_match, int32_t max_match);

  std::vector<int32_t> propose(std::span<const int32_t> tokens, int32_t k) override;
  bool deterministic() const override { return true; }
  const char* name() const override { return "ngram"; }

 private:
  int32_t min_match_;
  int32_t max_match_;
};

}  // namespace kvscope
