// SpmTokenizer: SentencePiece ("llama") vocabularies — Llama 2, Gemma — run
// by the sentencepiece library on a model built in memory from VocabData
// (sentencepiece_proto.h). Special tokens are split out here first, and the
// space prefix is added here, so behaviour matches llama.cpp: a text piece
// that starts the input or follows a special token gets one leading space
// when add_space_prefix is set. Malformed UTF-8 never reaches the library
// (which would turn it into U+FFFD): each such byte becomes its <0xNN> token
// as in llama.cpp, else U+FFFD's tokens (EncodeIssues' rule).
#pragma once

#include <array>
#include <memory>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace kvscope {

class SpmTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> create(const VocabData& data);
  ~SpmTokenizer() override;

  using Tokenizer::encode;
  std::vector<int32_t> encode(std::string_view text, bool parse_special, EncodeIssues* issues) const override;
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
  explicit SpmTokenizer(Vocab vocab);
  // Appends the ids of one text piece (space prefix already added).
  void encode_piece(std::string_view text, std::vector<int32_t>& out, EncodeIssues& issues) const;
  // Appends the library's ids for valid UTF-8; <unk> is counted, and left
  // out when the vocabulary marks it as a control token.
  void encode_valid(std::string_view text, std::vector<int32_t>& out, EncodeIssues& issues) const;

  Vocab vocab_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::vector<std::string> bytes_;  // [vocab_size] token_bytes for non-special tokens
  std::array<int32_t, 256> byte_ids_{};  // [256] id of <0xNN>, -1 when the vocabulary has none
  std::vector<int32_t> replacement_ids_;  // U+FFFD's ids, empty when it has none but <unk>
};

}  // namespace kvscope
