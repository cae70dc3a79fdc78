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
  return ready;
}

std::string StreamingDetokenizer::flush() {
  std::string rest = utf8::sanitize(pending_);
  pending_.clear();
  return rest;
}

void StreamingDetokenizer::reset() {
  pending_.clear();
  at_start_ = true;
}

}  // namespace kvscope
