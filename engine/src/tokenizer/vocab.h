// Vocab: the lookups both tokenizers share (text -> id, token types,
// end-of-generation set, special-token splitting). Built once from VocabData.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kvscope/result.h"
#include "tokenizer/special_token_matcher.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

class Vocab {
 public:
  // Checks ids and array sizes; an error names the bad field.
  static Result<Vocab> build(VocabData data);

  const VocabData& data() const { return data_; }
  int32_t size() const { return static_cast<int32_t>(data_.tokens.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < size(); }
  TokenType type(int32_t id) const;
  std::string_view text(int32_t id) const;
  std::optional<int32_t> find(std::string_view piece) const;
  bool is_control(int32_t id) const { return type(id) == TokenType::kControl; }
  bool is_eog(int32_t id) const { return eog_ids_.count(id) != 0; }
  // Splits text around literal special tokens: user-defined tokens always,
  // control and unknown tokens only with parse_special.
  std::vector<SpecialTokenMatcher::Fragment> split_special(std::string_view text,
                                                           bool parse_special) const;

 private:
  VocabData data_;
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_set<int32_t> eog_ids_;
  SpecialTokenMatcher user_defined_;   // used when !parse_special
  SpecialTokenMatcher all_special_;    // used when parse_special
};

}  // namespace kvscope
