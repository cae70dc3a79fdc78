#include "tokenizer/special_token_matcher.h"

#include <algorithm>

namespace kvscope {

void SpecialTokenMatcher::add(std::string_view text, int32_t id) {
  if (text.empty()) return;
  ids_.emplace(std::string(text), id);
  auto& lengths = lengths_by_first_byte_[static_cast<unsigned char>(text[0])];
  if (std::find(lengths.begin(), lengths.end(), text.size()) == lengths.end()) {
    lengths.push_back(text.size());
    std::sort(lengths.begin(), lengths.end(), std::greater<>());
  }
}

std::vector<SpecialTokenMatcher::Fragment> SpecialTokenMatcher::split(std::string_view text) const {
  std::vector<Fragment> out;
  size_t plain_begin = 0;
  size_t pos = 0;
  std::string key;
  while (pos < text.size()) {
    const auto& lengths = lengths_by_first_byte_[static_cast<unsigned char>(text[pos])];
    int32_t found_id = -1;
    size_t found_len = 0;
    for (size_t len : lengths) {
      if (len > text.size() - pos) continue;
      key.assign(text.substr(pos, len));
      auto it = ids_.find(key);
      if (it != ids_.end()) {
        found_id = it->second;
        found_len = len;
        break;
      }
    }
    if (found_len == 0) {
      ++pos;
      continue;
    }
    if (pos > plain_begin) out.push_back({text.substr(plain_begin, pos - plain_begin), -1});
    out.push_back({text.substr(pos, found_len), found_id});
    pos += found_len;
    plain_begin = pos;
  }
  if (text.size() > plain_begin) out.push_back({text.substr(plain_begin), -1});
  return out;
}

}  // namespace kvscope
