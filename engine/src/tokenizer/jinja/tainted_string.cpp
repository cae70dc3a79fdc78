#include "tokenizer/jinja/tainted_string.h"

#include <algorithm>

namespace kvscope::jinja {

TaintedString TaintedString::from_message(std::string text) {
  TaintedString s(std::move(text));
  s.mark(0, s.text_.size());
  return s;
}

bool TaintedString::any_tainted(size_t begin, size_t end) const {
  for (const TaintSpan& t : taint_) {
    if (t.begin < end && begin < t.end) return true;
  }
  return false;
}

void TaintedString::mark(size_t begin, size_t end) {
  if (begin >= end) return;
  if (!taint_.empty() && taint_.back().end >= begin) {
    taint_.back().end = std::max(taint_.back().end, end);
    return;
  }
  taint_.push_back({begin, end});
}

void TaintedString::append(const TaintedString& other) { append_slice(other, 0, other.size()); }

void TaintedString::append_marked(std::string_view s, bool tainted) {
  const size_t begin = text_.size();
  text_.append(s);
  if (tainted) mark(begin, text_.size());
}

void TaintedString::append_slice(const TaintedString& source, size_t begin, size_t end) {
  end = std::min(end, source.size());
  if (begin >= end) return;
  const size_t offset = text_.size();
  text_.append(source.text_, begin, end - begin);
  for (const TaintSpan& t : source.taint_) {
    const size_t b = std::max(t.begin, begin), e = std::min(t.end, end);
    if (b < e) mark(offset + b - begin, offset + e - begin);
  }
}

TaintedString TaintedString::slice(size_t begin, size_t end) const {
  TaintedString out;
  out.append_slice(*this, begin, end);
  return out;
}

TaintedString TaintedString::with_text_conservative(std::string new_text) const {
  TaintedString out(std::move(new_text));
  if (any_tainted()) out.mark(0, out.size());
  return out;
}

TaintedString TaintedString::with_same_length_text(std::string new_text) const {
  if (new_text.size() != text_.size()) return with_text_conservative(std::move(new_text));
  TaintedString out(std::move(new_text));
  out.taint_ = taint_;
  return out;
}

}  // namespace kvscope::jinja
