// SpmTokenizer: SentencePiece ("llama") vocabularies — Llama 2, Phi-3,
// Baichuan, Gemma 2/3 — encoded the way llama.cpp's llm_tokenizer_spm does:
// spaces become U+2581, the text is cut into characters, and the adjacent
// pair whose joined text is the token with the highest score is merged first
// (ties: leftmost), until no pair joins into a token. A character that is no
// token falls back to its bytes' <0xNN> tokens.
//
// Why not the sentencepiece library: the ids must be llama.cpp's, and the
// library differs from it in details (unknown characters, pieces of unused
// or control type); this loop is llama.cpp's own, in ~100 lines.
//
// Special tokens are split out first and the space prefix is added here, so
// that, as in llama.cpp, a text piece that starts the input or follows a
// special token gets one leading space when add_space_prefix is set. Where
// kvscope differs on purpose (tokenizer.h, EncodeIssues): a control token is
// never formed by merging plain text; malformed UTF-8 becomes <0xNN> tokens
// (else U+FFFD's tokens); a character without byte tokens becomes <unk>
// (llama.cpp stops with an exception there).
#pragma once

#include <array>
#include <memory>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace kvscope {

class SpmTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> create(const VocabData& data);

  std::vector<int32_t> encode_with_plain_ranges(std::string_view text, std::span<const TextRange> plain,
                                                EncodeIssues* issues) const override;
  std::string token_bytes(int32_t id, bool render_special = false) const override;
  int32_t vocab_size() const override { return vocab_.size(); }
  int32_t bos_id() const override { return vocab_.data().bos_id; }
  int32_t eos_id() const override { return vocab_.data().eos_id; }
  bool add_bos() const override { return vocab_.data().add_bos; }
  bool add_space_prefix() const override { return vocab_.data().add_space_prefix; }
  bool is_control(int32_t id) const override { return vocab_.is_control(id); }
  bool is_eog(int32_t id) const override { return vocab_.is_eog(id); }
  std::optional<int32_t> token_id(std::string_view piece) const override { return vocab_.find(piece); }
  std::string_view token_text(int32_t id) const override { return vocab_.text(id); }

 private:
  struct Scratch;
  explicit SpmTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
  // Token id of a merged text, -1 when none or when it is a control or
  // unknown token (never formed from plain text).
  int32_t mergeable_token(std::string_view text) const;
  // Appends the ids of one text piece (space prefix added); escapes its
  // spaces and cuts it where no merge can span.
  void encode_piece(std::string_view text, Scratch& scratch, std::vector<int32_t>& out, EncodeIssues& issues) const;
  // Appends the ids of one segment of escaped text: llama.cpp's merge loop.
  void merge_segment(std::string_view s, Scratch& scratch, std::vector<int32_t>& out, EncodeIssues& issues) const;
  // Appends the byte tokens of a symbol that is no token.
  void append_byte_fallback(std::string_view symbol, std::vector<int32_t>& out, EncodeIssues& issues) const;

  Vocab vocab_;
  std::vector<std::string> bytes_;        // [vocab_size] token_bytes for shown tokens
  std::array<int32_t, 256> byte_ids_{};   // [256] <0xNN> (else the one-byte token), -1 when neither
  std::vector<int32_t> replacement_ids_;  // U+FFFD's ids, empty when it has none
  int32_t unknown_id_ = -1;               // <unk> when usable for text (not a control token)
  std::vector<int32_t> joins_space_;      // code points some token has right before a U+2581, sorted
  bool cut_before_spaces_ = true;         // false when a token's text is malformed UTF-8
};

}  // namespace kvscope
