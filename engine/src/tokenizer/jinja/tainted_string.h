// TaintedString: a string that remembers which of its bytes came from the
// caller's data (a chat message) rather than from the template's literals.
// The chat template hands those byte ranges to the tokenizer, which then never
// makes a control token of them: a message that writes "<|im_end|>" cannot end
// its turn. Every operation that builds a string from other strings carries the
// ranges along (concatenation, slicing, strip, replace, case changes).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::jinja {

struct TaintSpan {
  size_t begin = 0;
  size_t end = 0;
};

class TaintedString {
 public:
  TaintedString() = default;
  // Untainted: a template literal or a computed string.
  explicit TaintedString(std::string text) : text_(std::move(text)) {}
  // Every byte tainted (a message's own text).
  static TaintedString from_message(std::string text);

  const std::string& text() const { return text_; }
  // Ascending, non-overlapping, non-empty, never touching.
  const std::vector<TaintSpan>& taint() const { return taint_; }
  bool empty() const { return text_.empty(); }
  size_t size() const { return text_.size(); }
  bool any_tainted(size_t begin, size_t end) const;
  bool any_tainted() const { return !taint_.empty(); }

  void append(const TaintedString& other);
  void append_plain(std::string_view s) { text_.append(s); }
  // Appends `s`, tainted when `tainted`.
  void append_marked(std::string_view s, bool tainted);
  // Appends bytes [begin, end) of `source` with their taint.
  void append_slice(const TaintedString& source, size_t begin, size_t end);
  TaintedString slice(size_t begin, size_t end) const;
  // Taints everything when any byte is tainted (for transformations that do
  // not keep byte positions).
  TaintedString with_text_conservative(std::string new_text) const;
  // The same taint over `new_text`, which has this string's length (a
  // byte-for-byte mapping such as ASCII case changes).
  TaintedString with_same_length_text(std::string new_text) const;

 private:
  void mark(size_t begin, size_t end);

  std::string text_;
  std::vector<TaintSpan> taint_;
};

}  // namespace kvscope::jinja
