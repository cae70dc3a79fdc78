// SpecialTokenMatcher: splits text around literal special tokens
// ("<|im_start|>user\nhi<|im_end|>" -> [id, "user\nhi", id]) before the normal
// tokenizer runs on the pieces between. Leftmost match wins, then the longest.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvscope {

class SpecialTokenMatcher {
 public:
  // One piece of split text: either plain text (id < 0) or a special token.
  struct Fragment {
    std::string_view text;  // points into the text given to split()
    int32_t id = -1;
  };

  // Registers a literal; empty texts are ignored.
  void add(std::string_view text, int32_t id);
  bool empty() const { return ids_.empty(); }
  // Splits `text`; plain fragments are never empty.
  std::vector<Fragment> split(std::string_view text) const;

 private:
  std::unordered_map<std::string, int32_t> ids_;
  // Why per first byte: scanning tries only the lengths that exist for the
  // current byte (a few dozen at most), so a 10k-token special list costs
  // O(text * lengths) instead of O(text * tokens).
  std::array<std::vector<size_t>, 256> lengths_by_first_byte_;  // descending
};

}  // namespace kvscope
