// SpecialTokenMatcher: splits text around literal special tokens
// ("<|im_start|>user\nhi<|im_end|>" -> [id, "user\nhi", id]) before the normal
// tokenizer runs on the pieces between, the way llama.cpp's
// tokenizer_st_partition does: the longest token text first, every
// occurrence of it in every piece left to right, then the next shorter one.
// (Leftmost-first would differ: with "abc" and "xa" as tokens, "xabc" is
// ["x", abc] here and in llama.cpp.) A token may drop the ASCII spaces before
// (lstrip) or after (rstrip) its occurrences, as Phi-3's do.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/token_attributes.h"

namespace kvscope {

class SpecialTokenMatcher {
 public:
  // One piece of split text: either plain text (id < 0) or a special token.
  struct Fragment {
    std::string_view text;  // points into the text given to split()
    int32_t id = -1;
  };

  // Registers a literal; empty texts are ignored, and a text registered
  // twice keeps its first id.
  void add(std::string_view text, int32_t id, bool lstrip = false, bool rstrip = false);
  bool empty() const { return groups_.empty(); }
  // Splits `text`; plain fragments are never empty.
  std::vector<Fragment> split(std::string_view text) const;

 private:
  struct Entry {
    int32_t id;
    bool lstrip, rstrip;
  };
  // All registered texts of one length. Why grouped: a scan tries one hash
  // lookup per position and length (after byte filters), so tens of
  // thousands of special tokens cost O(text * distinct lengths), not
  // O(text * tokens).
  struct Group {
    size_t length = 0;
    // Bytes the texts have first, second and last: most positions fail one
    // of these before any hashing (Gemma 3 has 31 lengths of space runs).
    std::array<bool, 256> first_bytes{};
    std::array<bool, 256> second_bytes{};
    std::array<bool, 256> last_bytes{};
    std::unordered_map<std::string, Entry, StringHash, std::equal_to<>> entries;
  };
  void split_by(const Group& group, std::vector<Fragment>& fragments) const;

  std::vector<Group> groups_;  // by length, longest first
};

}  // namespace kvscope
