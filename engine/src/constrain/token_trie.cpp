// TokenTrie (see token_trie.h).
#include "constrain/token_trie.h"

#include <algorithm>

namespace kvscope {

TokenTrie::TokenTrie(std::vector<std::string> token_bytes, std::vector<int32_t> eog)
    : bytes_(std::move(token_bytes)), eog_(std::move(eog)) {
  std::sort(eog_.begin(), eog_.end());
  for (int32_t id = 0; id < vocab_size(); ++id) {
    if (!bytes_[static_cast<size_t>(id)].empty() && !is_eog(id)) ids_.push_back(id);
  }
  std::sort(ids_.begin(), ids_.end(), [this](int32_t a, int32_t b) { return bytes(a) < bytes(b); });
  nodes_.emplace_back();
  build(0, 0, static_cast<int32_t>(ids_.size()), 0);
}

bool TokenTrie::is_eog(int32_t id) const { return std::binary_search(eog_.begin(), eog_.end(), id); }

// ids_[begin, end) share their first `depth` bytes (the path to `node`) and are sorted.
void TokenTrie::build(int32_t node, int32_t begin, int32_t end, size_t depth) {
  max_depth_ = std::max(max_depth_, depth);
  int32_t i = begin;
  while (i < end && bytes(ids_[static_cast<size_t>(i)]).size() == depth) ++i;
  nodes_[static_cast<size_t>(node)].token_begin = begin;
  nodes_[static_cast<size_t>(node)].token_end = i;
  // Children in one block (so a node's children are contiguous), then each subtree.
  std::vector<std::pair<int32_t, int32_t>> groups;  // [children] ranges of ids_
  while (i < end) {
    const char b = bytes(ids_[static_cast<size_t>(i)])[depth];
    int32_t j = i;
    while (j < end && bytes(ids_[static_cast<size_t>(j)])[depth] == b) ++j;
    groups.emplace_back(i, j);
    i = j;
  }
  const auto first = static_cast<int32_t>(nodes_.size());
  nodes_[static_cast<size_t>(node)].first_child = first;
  nodes_[static_cast<size_t>(node)].num_children = static_cast<int32_t>(groups.size());
  for (const auto& [b, e] : groups) {
    Node child;
    child.byte = static_cast<uint8_t>(bytes(ids_[static_cast<size_t>(b)])[depth]);
    nodes_.push_back(child);
  }
  for (size_t k = 0; k < groups.size(); ++k) {
    build(first + static_cast<int32_t>(k), groups[k].first, groups[k].second, depth + 1);
  }
}

void TokenTrie::visit(int32_t node, size_t depth, std::vector<GrammarMatcher>& states, TokenMask& mask) const {
  const Node& n = nodes_[static_cast<size_t>(node)];
  for (int32_t c = n.first_child; c < n.first_child + n.num_children; ++c) {
    const Node& child = nodes_[static_cast<size_t>(c)];
    if (!states[depth].advance_into(child.byte, states[depth + 1])) continue;  // prune the whole subtree
    for (int32_t t = child.token_begin; t < child.token_end; ++t) {
      const int32_t id = ids_[static_cast<size_t>(t)];
      mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
    if (child.num_children > 0) visit(c, depth + 1, states, mask);
  }
}

void TokenTrie::allowed_tokens(const GrammarMatcher& state, TokenMask& mask) const {
  mask.assign((static_cast<size_t>(vocab_size()) + 63) / 64, 0);
  std::vector<GrammarMatcher> states(max_depth_ + 1, state);
  visit(0, 0, states, mask);
  bool any = false;
  for (uint64_t w : mask) any = any || w != 0;
  if (state.is_complete() || !any) {
    for (int32_t id : eog_) {
      if (id >= 0 && id < vocab_size()) mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  }
}

}  // namespace kvscope
