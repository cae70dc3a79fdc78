// StreamingDetokenizer: turns generated token ids into text as they arrive.
// A token may end in the middle of a UTF-8 character (byte-level BPE pieces,
// SentencePiece <0xNN> byte fallback), so incomplete trailing bytes are held
// back until the rest arrives; push() only ever returns whole characters.
// Bytes that can never become a character are emitted as U+FFFD.
#pragma once

#include <cstdint>
#include <string>

namespace kvscope {

class Tokenizer;

class StreamingDetokenizer {
 public:
  // `tokenizer` must outlive this object. render_special: show control
  // tokens' text (e.g. "<|im_end|>") instead of hiding them.
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special = false);

  // Adds one token; returns the text that is now complete (maybe "").
  std::string push(int32_t id);
  // End of stream: returns whatever is held, malformed bytes as U+FFFD.
  std::string flush();
  // Forgets held bytes and starts a new text (the space prefix rule re-arms).
  void reset();
  // Bytes held back waiting for the rest of a character.
  size_t num_pending_bytes() const { return pending_.size(); }
  // Characters (code points) returned since construction or reset(): where
  // the next token's text will start in the reply.
  size_t num_chars_returned() const { return num_chars_returned_; }

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  bool at_start_ = true;  // no text emitted yet: strip the SentencePiece dummy-prefix space
  std::string pending_;   // bytes not yet returned
  size_t num_chars_returned_ = 0;

  std::string counted(std::string text);
};

}  // namespace kvscope
