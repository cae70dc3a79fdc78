// Proposer: guesses the next few tokens of a sequence for speculative
// decoding (docs/speculative.md). The engine verifies the guesses in the same
// forward pass as ordinary decoding and keeps only those the model would have
// produced itself, so a proposer changes speed, never the output.
//
// Implementations: NgramProposer (prompt lookup, spec/ngram_proposer.h), and
// ModelProposer (spec/model_proposer.h: a draft model, or early-exit
// self-speculation), which needs forward passes: needs_forward() is true, the
// scheduler only reserves its draft rows and the engine step drafts for all
// speculating sequences of the step together (ModelProposer::draft).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kvscope/engine_config.h"

namespace kvscope {

class Proposer {
 public:
  virtual ~Proposer() = default;

  // Required. At most k (>= 1) draft tokens to follow `tokens` (a sequence's
  // prompt + generated tokens, oldest first), most likely next token first.
  // Empty when it has no guess: the sequence then decodes one token as usual
  // and costs nothing extra.
  virtual std::vector<int32_t> propose(std::span<const int32_t> tokens, int32_t k) = 0;

  // Required. Whether the drafts are deterministic (q is one-hot on each draft
  // token). Verification relies on it: for such a proposer accepting draft x
  // with probability p(x) is the exact rule (spec/rejection_sampler.h); a
  // proposer that samples its drafts would also need to report q.
  virtual bool deterministic() const = 0;

  // Required. Short name for logs and metrics ("ngram"): spec_method_name of its method.
  virtual const char* name() const = 0;

  // Whether drafting needs a model's forward pass. Then propose() is not
  // called: the scheduler decides who drafts how many tokens and reserves
  // their KV slots, leaving Sequence::draft empty, and the engine step fills
  // every draft in one batched call (ModelProposer::draft).
  virtual bool needs_forward() const { return false; }
};

// The proposer config.spec asks for, nullptr when speculation is off.
// Precondition: config.validate() is empty.
std::unique_ptr<Proposer> make_proposer(const EngineConfig& config);

}  // namespace kvscope
