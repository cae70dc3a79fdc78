// TokenTrie: the vocabulary's token bytes as a trie, built once per engine
// (on the first constrained request), and the token mask it makes cheap.
//
// allowed_tokens walks the trie depth first from a matcher's state, feeding
// each edge's byte to a copy of the state: a subtree is pruned as soon as its
// prefix is rejected, and every token whose node is reached is allowed. Work
// is therefore proportional to the trie nodes whose prefix the grammar
// accepts, not to the vocabulary's total bytes; inside a JSON string that is
// most of the trie, which is why TokenConstraint caches masks per state.
//
// End-of-generation tokens are not in the trie: they are allowed only when
// the value is complete (or, so that a reply can always end, when no token at
// all can continue it).
// Tests: tests/engine/constrain/token_mask_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "constrain/grammar_matcher.h"

namespace kvscope {

// [ceil(vocab / 64)] bit i of word i / 64: token i allowed.
using TokenMask = std::vector<uint64_t>;

inline bool mask_allows(const TokenMask& mask, int32_t id) {
  return (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
}

class TokenTrie {
 public:
  // token_bytes[id]: what token id writes (Tokenizer::token_bytes without
  // control text, so control tokens are "" and never allowed); eog: the
  // end-of-generation ids.
  TokenTrie(std::vector<std::string> token_bytes, std::vector<int32_t> eog);

  int32_t vocab_size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_eog(int32_t id) const;
  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }

  // The tokens that may follow `state` (see the header comment).
  void allowed_tokens(const GrammarMatcher& state, TokenMask& mask) const;

 private:
  struct Node {
    int32_t first_child = 0;  // children are nodes_[first_child, first_child + num_children)
    int32_t num_children = 0;
    int32_t token_begin = 0;  // tokens ending here: ids_[token_begin, token_end)
    int32_t token_end = 0;
    uint8_t byte = 0;         // the edge into this node
  };
  void build(int32_t node, int32_t begin, int32_t end, size_t depth);
  void visit(int32_t node, size_t depth, std::vector<GrammarMatcher>& states, TokenMask& mask) const;

  std::vector<std::string> bytes_;  // [vocab]
  std::vector<int32_t> eog_;
  std::vector<int32_t> ids_;        // token ids sorted by bytes (non-empty, not end-of-generation)
  std::vector<Node> nodes_;         // [0]: the root (empty prefix)
  size_t max_depth_ = 0;
};

}  // namespace kvscope
