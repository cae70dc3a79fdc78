#include "tokenizer/vocab.h"

#include <fmt/format.h>

namespace kvscope {

namespace {
// Turn enders of the chat formats we know; a vocabulary that has one of these
// uses it to end a reply even when its eos id points elsewhere.
constexpr std::string_view kEogTexts[] = {
    "<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|eom_id|>", "<|endoftext|>", "<|end|>",
};

Status check_id(const char* name, int32_t id, size_t num_tokens) {
  if (id < -1 || id >= static_cast<int64_t>(num_tokens))
    return Error{fmt::format("tokenizer: {} {} is outside the vocabulary of {} tokens", name, id,
                             num_tokens)};
  return Status::success();
}
}  // namespace

Result<Vocab> Vocab::build(VocabData data) {
  const size_t n = data.tokens.size();
  if (n == 0) return Error{"tokenizer: the vocabulary has no tokens"};
  if (!data.scores.empty() && data.scores.size() != n)
    return Error{fmt::format("tokenizer: {} scores for {} tokens", data.scores.size(), n)};
  if (!data.token_types.empty() && data.token_types.size() != n)
    return Error{fmt::format("tokenizer: {} token types for {} tokens", data.token_types.size(), n)};
  for (auto [name, id] : {std::pair{"bos id", data.bos_id}, {"eos id", data.eos_id},
                          {"unknown id", data.unk_id}, {"padding id", data.pad_id}}) {
    if (Status s = check_id(name, id, n); !s) return Error{s.error()};
  }

  Vocab v;
  v.data_ = std::move(data);
  v.ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) v.ids_.emplace(v.data_.tokens[i], static_cast<int32_t>(i));

  if (v.data_.eos_id >= 0) v.eog_ids_.insert(v.data_.eos_id);
  for (std::string_view t : kEogTexts)
    if (auto id = v.find(t)) v.eog_ids_.insert(*id);

  for (int32_t id = 0; id < static_cast<int32_t>(n); ++id) {
    const TokenType t = v.type(id);
    const std::string& text = v.data_.tokens[id];
    if (t == TokenType::kUserDefined) {
      v.user_defined_.add(text, id);
      v.all_special_.add(text, id);
    } else if (t == TokenType::kControl || t == TokenType::kUnknown) {
      v.all_special_.add(text, id);
    }
  }
  return v;
}

TokenType Vocab::type(int32_t id) const {
  if (!valid(id)) return TokenType::kUndefined;
  return data_.token_types.empty() ? TokenType::kNormal : data_.token_types[id];
}

std::string_view Vocab::text(int32_t id) const {
  return valid(id) ? std::string_view(data_.tokens[id]) : std::string_view();
}

std::optional<int32_t> Vocab::find(std::string_view piece) const {
  auto it = ids_.find(std::string(piece));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::vector<SpecialTokenMatcher::Fragment> Vocab::split_special(std::string_view text,
                                                                bool parse_special) const {
  const SpecialTokenMatcher& m = parse_special ? all_special_ : user_defined_;
  if (m.empty()) {
    if (text.empty()) return {};
    return {{text, -1}};
  }
  return m.split(text);
}

}  // namespace kvscope
