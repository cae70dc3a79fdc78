// SpmTokenizer: SentencePiece ("llama") vocabularies — Llama 2, Gemma — run
// by the sentencepiece library on a model built in memory from VocabData
// (sentencepiece_proto.h). Special tokens are split out here first, and the
// space prefix is added here, so behaviour matches llama.cpp: a text piece
// that starts the input or follows a special token gets one leading space
// when add_space_prefix is set.
#pragma once

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

  std::vector<int32_t> encode(std::string_view text, bool parse_special) const override;
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

  Vocab vocab_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::vector<std::string> bytes_;  // [vocab_size] token_bytes for non-special tokens
};

}  // namespace kvscope
