#include "tokenizer/streaming_detokenizer.h"

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace kvscope {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(tokenizer), render_special_(render_special) {}

std::string StreamingDetokenizer::push(int32_t id) {
  std::string bytes = tokenizer_.token_bytes(id, render_special_);
  if (bytes.empty()) return {};  // BOS and other hidden tokens do not end the "start"
  // encode() put a space before the text (add_space_prefix), so the first
  // token of the output starts with it; the user never typed that space.
  if (at_start_ && tokenizer_.add_space_prefix() && !tokenizer_.is_control(id) && bytes[0] == ' ')
    bytes.erase(0, 1);
  at_start_ = false;
  pending_ += bytes;
  const size_t hold = utf8::incomplete_tail(pending_);
  std::string ready = utf8::sanitize(std::string_view(pending_).substr(0, pending_.size() - hold));
  pending_.erase(0, pending_.size() - hold);
  return counted(std::move(ready));
}

std::string StreamingDetokenizer::flush() {
  std::string rest = utf8::sanitize(pending_);
  pending_.clear();
  return counted(std::move(rest));
}

void StreamingDetokenizer::reset() {
  pending_.clear();
  at_start_ = true;
  num_chars_returned_ = 0;
}

std::string StreamingDetokenizer::counted(std::string text) {
  // sanitize() made it valid UTF-8: every byte that is not a continuation
  // byte starts a character.
  for (const char c : text) num_chars_returned_ += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return text;
}

}  // namespace kvscope
