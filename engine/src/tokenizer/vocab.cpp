#include "tokenizer/vocab.h"

#include <fmt/format.h>

#include <algorithm>

namespace kvscope {

namespace {
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
  for (auto [name, id] : {std::pair{"bos id", data.bos_id}, {"eos id", data.eos_id}, {"unknown id", data.unk_id},
                          {"padding id", data.pad_id}, {"end-of-turn id", data.eot_id},
                          {"end-of-message id", data.eom_id}}) {
    if (Status s = check_id(name, id, n); !s) return Error{s.error()};
  }

  Vocab v;
  v.data_ = std::move(data);
  v.ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string& text = v.data_.tokens[i];
    if (text.empty()) text = fmt::format("[EMPTY_{}]", i);
    v.ids_.insert_or_assign(text, static_cast<int32_t>(i));
  }

  TokenAttributes attributes = compute_token_attributes(v.data_, v.ids_);
  v.attrs_ = std::move(attributes.attrs);
  v.eog_ids_ = std::move(attributes.eog_ids);

  for (int32_t id = 0; id < static_cast<int32_t>(n); ++id) {
    const uint16_t a = v.attrs_[id];
    if (!(a & (kAttrControl | kAttrUserDefined | kAttrUnknown))) continue;
    const std::string& text = v.data_.tokens[id];
    const bool lstrip = a & kAttrLstrip, rstrip = a & kAttrRstrip;
    v.all_special_.add(text, id, lstrip, rstrip);
    if (!(a & (kAttrControl | kAttrUnknown))) v.user_defined_.add(text, id, lstrip, rstrip);
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
  auto it = ids_.find(piece);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

bool Vocab::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

std::vector<SpecialTokenMatcher::Fragment> Vocab::split_special(std::string_view text, bool parse_special) const {
  const TextRange all{0, text.size()};
  return split_special(text, parse_special ? std::span<const TextRange>() : std::span(&all, 1));
}

std::vector<SpecialTokenMatcher::Fragment> Vocab::split_special(std::string_view text,
                                                                std::span<const TextRange> plain) const {
  using Fragment = SpecialTokenMatcher::Fragment;
  std::vector<Fragment> out;
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  // Joins plain text that continues the previous plain fragment, and drops
  // spaces next to Phi-3-style tokens across a range's edge too.
  auto append = [&](Fragment f) {
    if (f.id < 0) {
      if (!out.empty() && out.back().id >= 0 && (attr(out.back().id) & kAttrRstrip)) {
        while (!f.text.empty() && is_space(f.text.front())) f.text.remove_prefix(1);
        if (f.text.empty()) return;
      }
      if (!out.empty() && out.back().id < 0 && out.back().text.data() + out.back().text.size() == f.text.data()) {
        out.back().text = std::string_view(out.back().text.data(), out.back().text.size() + f.text.size());
        return;
      }
    } else if ((attr(f.id) & kAttrLstrip) && !out.empty() && out.back().id < 0) {
      std::string_view& left = out.back().text;
      while (!left.empty() && is_space(left.back())) left.remove_suffix(1);
      if (left.empty()) out.pop_back();
    }
    out.push_back(f);
  };
  auto add_segment = [&](size_t begin, size_t end, bool special) {
    if (begin >= end) return;
    const std::string_view segment = text.substr(begin, end - begin);
    const SpecialTokenMatcher& m = special ? all_special_ : user_defined_;
    if (m.empty()) {
      append({segment, -1});
      return;
    }
    for (const Fragment& f : m.split(segment)) append(f);
  };
  size_t pos = 0;
  for (const TextRange& r : plain) {
    const size_t begin = std::clamp(r.begin, pos, text.size()), end = std::clamp(r.end, begin, text.size());
    add_segment(pos, begin, /*special=*/true);
    add_segment(begin, end, /*special=*/false);
    pos = end;
  }
  add_segment(pos, text.size(), /*special=*/true);
  return out;
}

}  // namespace kvscope
