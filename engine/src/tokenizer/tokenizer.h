// Tokenizer: text <-> token ids. Two implementations behind one interface:
// byte-level BPE (bpe_tokenizer.h, GPT-2 style "gpt2" vocabularies) and
// SentencePiece (spm_tokenizer.h, "llama" vocabularies). Both agree with
// llama.cpp on its tokenizer test suite (tests/engine/tokenizer).
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

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids, never adding BOS/EOS (callers ask add_bos()). With
  // parse_special, control tokens written literally ("<|im_start|>") become
  // their ids; user-defined tokens are always kept whole, as llama.cpp does.
  virtual std::vector<int32_t> encode(std::string_view text, bool parse_special) const = 0;

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
