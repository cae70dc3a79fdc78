// TokenConstraint (see token_constraint.h).
#include "constrain/token_constraint.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace kvscope {
namespace {

// An array's item count matters to what may follow only up to its bounds
// (minItems, maxItems): beyond them every count allows the same bytes. So the
// strings of an array's items share one cached mask instead of one per item.
uint32_t mask_relevant_index(const GrammarNode& n, uint32_t index) {
  if (n.kind != GrammarNodeKind::Array) return index;
  const auto bound = static_cast<uint32_t>(std::max(n.min_items, n.max_items));
  return std::min(index, bound);
}

}  // namespace

const TokenMask& TokenConstraint::allowed_tokens(const TokenTrie& trie) {
  // The state's identity: every field of every frame of every stack.
  key_.clear();
  auto put = [this](const auto& v) { key_.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const GrammarMatcher::Stack& s : matcher_.stacks()) {
    put(static_cast<uint32_t>(s.size()));
    for (const GrammarMatcher::Frame& f : s) {
      put(f.node);
      put(mask_relevant_index(matcher_.grammar().node(f.node), f.index));
      put(f.alive);
      put(f.pos);
      put(f.phase);
      put(f.ws);
    }
  }
  if (auto it = cache_.find(key_); it != cache_.end()) return it->second;
  if (cache_.size() >= kMaxCachedMasks) cache_.clear();
  TokenMask& mask = cache_[key_];
  trie.allowed_tokens(matcher_, mask);
  return mask;
}

const float* TokenConstraint::mask_logits(const float* logits, int32_t vocab, const TokenTrie& trie) {
  const TokenMask& mask = allowed_tokens(trie);
  masked_.assign(static_cast<size_t>(vocab), -std::numeric_limits<float>::infinity());
  for (size_t w = 0; w < mask.size(); ++w) {
    for (uint64_t bits = mask[w]; bits != 0; bits &= bits - 1) {
      const size_t id = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
      if (id < masked_.size()) masked_[id] = logits[id];
    }
  }
  return masked_.data();
}

bool TokenConstraint::accept(int32_t token, const TokenTrie& trie) {
  if (token < 0 || token >= trie.vocab_size() || trie.is_eog(token)) return true;
  return matcher_.advance(trie.bytes(token));
}

}  // namespace kvscope
