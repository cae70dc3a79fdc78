// TokenConstraint: one sequence's grammar-constrained decoding state (held by
// its Sampler): where its output stands in the grammar, and the mask of the
// tokens that may come next.
//
// Per step: mask_logits() copies the row with every forbidden token's logit
// at -inf; the sampler draws from that (so the penalties, greedy, top-k/p and
// the reported logprobs all see the constrained distribution); accept()
// then feeds the chosen token's bytes to the matcher.
//
// Masks are cached by state (up to kMaxCachedMasks, then the cache starts
// again): inside a JSON string, or between an object's values, the state
// repeats from token to token and the trie walk is skipped.
// Tests: tests/engine/constrain/token_mask_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "constrain/grammar_matcher.h"
#include "constrain/token_trie.h"

namespace kvscope {

class TokenConstraint {
 public:
  static constexpr size_t kMaxCachedMasks = 32;

  explicit TokenConstraint(std::shared_ptr<const Grammar> grammar) : matcher_(std::move(grammar)) {}

  // The allowed tokens from the current state.
  const TokenMask& allowed_tokens(const TokenTrie& trie);
  // `logits` ([vocab]) with the forbidden tokens at -inf, in a buffer this
  // object owns (valid until the next call). Precondition: vocab == trie.vocab_size().
  const float* mask_logits(const float* logits, int32_t vocab, const TokenTrie& trie);
  // After `token` was sampled: advances by its bytes (an end-of-generation
  // token changes nothing). False if its bytes do not fit (only possible for
  // a token that was not allowed).
  bool accept(int32_t token, const TokenTrie& trie);
  // Advances by raw bytes (tests and benchmarks start from a given text).
  bool advance(std::string_view bytes) { return matcher_.advance(bytes); }

  const GrammarMatcher& matcher() const { return matcher_; }

 private:
  GrammarMatcher matcher_;
  std::unordered_map<std::string, TokenMask> cache_;  // state bytes -> mask
  std::string key_;
  std::vector<float> masked_;  // [vocab]
};

}  // namespace kvscope
