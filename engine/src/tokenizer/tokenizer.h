// Tokenizer: text <-> token ids. Two implementations behind one interface:
// BPE (bpe_tokenizer.h: "gpt2" byte-level vocabularies with the pre-tokenizer
// table's rows, and Gemma 4's "gemma4") and SentencePiece (spm_tokenizer.h,
// "llama" vocabularies). Both agree with llama.cpp on its tokenizer test
// suite and on a differential corpus (tests/engine/tokenizer).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/result.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

// What encode() could not keep as written. One rule for both tokenizers, so
// that user text never becomes a control token:
//  1. A byte that is not part of valid UTF-8 becomes the vocabulary's token
//     for that byte where it has one (SentencePiece <0xNN>, a byte-level
//     BPE's byte symbol): nothing is lost, and it is what llama.cpp does for
//     SentencePiece.
//  2. A character (or such a byte) the vocabulary cannot spell becomes
//     U+FFFD's tokens, as llama.cpp and SentencePiece do with malformed
//     UTF-8. Seen in practice: SmolLM2's byte-level vocabulary lacks 21 of the
//     256 byte symbols (0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1,
//     0xF2, 0xF5..0xFF); the unknown token it fell back to was id 0,
//     <|endoftext|>. SentencePiece without byte fallback gives <unk> here
//     (as llama.cpp does).
//  3. Where that is impossible too (no U+FFFD, or an unknown token that is a
//     control token), the character is left out.
// Valid text that the vocabulary can spell is untouched (llama.cpp's ids).
struct EncodeIssues {
  int32_t num_invalid_bytes = 0;  // bytes not part of valid UTF-8 (kept by rule 1 or replaced)
  int32_t num_replaced = 0;       // characters or bytes given U+FFFD's tokens or <unk> (rule 2)
  int32_t num_dropped = 0;        // characters or bytes left out (rule 3)
  int32_t first_byte = -1;        // first byte of the first one replaced or dropped; -1: none

  bool any() const { return num_invalid_bytes > 0 || num_replaced > 0 || num_dropped > 0; }
  // One more replaced (or dropped) character; `byte` its first byte, -1 when not known.
  void add_replaced(int32_t byte, bool dropped);
};

// A sentence for a person ("the text has 2 bytes that are not valid UTF-8;
// 1 character has no token in this vocabulary (first byte 0xFF) and became
// U+FFFD"), "" when there is nothing to say.
std::string describe(const EncodeIssues& issues);

// Bytes [begin, end) of a text.
struct TextRange {
  size_t begin = 0;
  size_t end = 0;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids, never adding BOS/EOS (callers ask add_bos()). With
  // parse_special, control tokens written literally ("<|im_start|>") become
  // their ids; user-defined tokens are always kept whole, as llama.cpp does.
  // Text with no token of its own follows EncodeIssues' rule; `issues`, when
  // given, counts what was replaced (it is added to, not reset).
  std::vector<int32_t> encode(std::string_view text, bool parse_special, EncodeIssues* issues) const;
  std::vector<int32_t> encode(std::string_view text, bool parse_special) const {
    return encode(text, parse_special, nullptr);
  }
  // As encode() with parse_special, except inside `plain` (ascending,
  // non-overlapping ranges of `text`), where control-token text stays text.
  // For a rendered chat prompt: the template's own markers become control
  // tokens, the messages' text never does (ChatTemplate::render_prompt).
  // The ids are those of encoding the whole text at once (a word may span
  // a range's edge), not of encoding the pieces one by one.
  virtual std::vector<int32_t> encode_with_plain_ranges(std::string_view text, std::span<const TextRange> plain,
                                                        EncodeIssues* issues) const = 0;

  // The raw bytes token `id` stands for (may be part of a UTF-8 character).
  // Control/unknown tokens give "" unless render_special, then their text.
  // Out-of-range ids give "".
  virtual std::string token_bytes(int32_t id, bool render_special = false) const = 0;

  // Number of ids, including control tokens.
  virtual int32_t vocab_size() const = 0;
  // Beginning/end-of-sequence ids, -1 when the vocabulary has none.
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
  // Whether a prompt should start with BOS (tokenizer.ggml.add_bos_token).
  virtual bool add_bos() const = 0;
  // Whether encode() puts a space before the text (SentencePiece dummy
  // prefix); detokenisers strip it from the first token.
  virtual bool add_space_prefix() const = 0;
  // Control token (<s>, <|im_end|>): not text, hidden when detokenising.
  virtual bool is_control(int32_t id) const = 0;
  // End of generation: eos and turn enders (<|im_end|>, <end_of_turn>, ...).
  virtual bool is_eog(int32_t id) const = 0;
  // Exact lookup of a token by its stored text ("<|im_start|>", "▁the", "Ġthe").
  virtual std::optional<int32_t> token_id(std::string_view piece) const = 0;
  // The token's text as stored in the vocabulary ("" when out of range).
  virtual std::string_view token_text(int32_t id) const = 0;

  // Convenience: concatenated token_bytes (not virtual, built on the above).
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;
};

// Builds the tokenizer VocabData asks for. Errors name the unknown
// tokenizer model or pre-tokenizer, or the inconsistent field.
Result<std::unique_ptr<Tokenizer>> create_tokenizer(const VocabData& vocab);

}  // namespace kvscope
