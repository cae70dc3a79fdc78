#include "tokenizer/special_token_matcher.h"

#include <algorithm>

namespace kvscope {

namespace {
// llama.cpp strips with isspace() on single bytes: ASCII whitespace only.
bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
}  // namespace

void SpecialTokenMatcher::add(std::string_view text, int32_t id, bool lstrip, bool rstrip) {
  if (text.empty()) return;
  auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.length <= text.size(); });
  if (it == groups_.end() || it->length != text.size()) {
    Group g;
    g.length = text.size();
    it = groups_.insert(it, std::move(g));
  }
  it->first_bytes[static_cast<unsigned char>(text[0])] = true;
  it->second_bytes[static_cast<unsigned char>(text[text.size() > 1 ? 1 : 0])] = true;
  it->last_bytes[static_cast<unsigned char>(text.back())] = true;
  it->entries.emplace(std::string(text), Entry{id, lstrip, rstrip});
}

std::vector<SpecialTokenMatcher::Fragment> SpecialTokenMatcher::split(std::string_view text) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({text, -1});
  for (const Group& group : groups_) split_by(group, fragments);
  return fragments;
}

void SpecialTokenMatcher::split_by(const Group& group, std::vector<Fragment>& fragments) const {
  std::vector<Fragment> out;
  out.reserve(fragments.size());
  const size_t len = group.length;
  for (const Fragment& fragment : fragments) {
    const std::string_view piece = fragment.text;
    if (fragment.id >= 0 || piece.size() < len) {
      out.push_back(fragment);
      continue;
    }
    size_t rest = 0;  // start of the text not yet emitted
    size_t pos = 0;
    while (pos + len <= piece.size()) {
      if (!group.first_bytes[static_cast<unsigned char>(piece[pos])] ||
          !group.second_bytes[static_cast<unsigned char>(piece[len > 1 ? pos + 1 : pos])] ||
          !group.last_bytes[static_cast<unsigned char>(piece[pos + len - 1])]) {
        ++pos;
        continue;
      }
      auto it = group.entries.find(piece.substr(pos, len));
      if (it == group.entries.end()) {
        ++pos;
        continue;
      }
      const Entry& e = it->second;
      size_t left_end = pos;
      if (e.lstrip) {
        while (left_end > rest && is_ascii_space(piece[left_end - 1])) --left_end;
      }
      if (left_end > rest) out.push_back({piece.substr(rest, left_end - rest), -1});
      out.push_back({piece.substr(pos, len), e.id});
      pos += len;
      if (e.rstrip) {
        while (pos < piece.size() && is_ascii_space(piece[pos])) ++pos;
      }
      rest = pos;
    }
    if (rest < piece.size()) out.push_back({piece.substr(rest), -1});
  }
  fragments.swap(out);
}

}  // namespace kvscope
