// Vocab: the lookups both tokenizers share (text -> id, token attributes,
// end-of-generation set, special-token splitting). Built once from VocabData.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/result.h"
#include "tokenizer/special_token_matcher.h"
#include "tokenizer/token_attributes.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

class Vocab {
 public:
  // Checks ids and array sizes; an error names the bad field. An empty token
  // text becomes "[EMPTY_<id>]" and a repeated text finds its last id, as in
  // llama.cpp.
  static Result<Vocab> build(VocabData data);

  const VocabData& data() const { return data_; }
  int32_t size() const { return static_cast<int32_t>(data_.tokens.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < size(); }
  TokenType type(int32_t id) const;  // as stored in the file
  // TokenAttr bits after llama.cpp's corrections (token_attributes.h); 0 when out of range.
  uint16_t attr(int32_t id) const { return valid(id) ? attrs_[id] : 0; }
  std::string_view text(int32_t id) const;
  std::optional<int32_t> find(std::string_view piece) const;
  // Control token (<s>, <|im_end|>): never produced from plain text.
  bool is_control(int32_t id) const { return (attr(id) & kAttrControl) != 0; }
  // Control or unknown: hidden when detokenising unless asked.
  bool is_hidden(int32_t id) const { return (attr(id) & (kAttrControl | kAttrUnknown)) != 0; }
  bool is_eog(int32_t id) const;
  // Splits text around literal special tokens: user-defined tokens always,
  // control and unknown tokens only outside the `plain` ranges (ascending,
  // non-overlapping byte ranges of `text`). Plain text on both sides of a
  // range's edge stays one fragment.
  std::vector<SpecialTokenMatcher::Fragment> split_special(std::string_view text,
                                                           std::span<const TextRange> plain) const;
  std::vector<SpecialTokenMatcher::Fragment> split_special(std::string_view text, bool parse_special) const;

 private:
  VocabData data_;
  TokenIdMap ids_;
  std::vector<uint16_t> attrs_;   // [num_tokens]
  std::vector<int32_t> eog_ids_;  // ascending
  SpecialTokenMatcher user_defined_;  // used when !parse_special
  SpecialTokenMatcher all_special_;   // used when parse_special
};

}  // namespace kvscope
