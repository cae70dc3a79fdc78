// BpeTokenizer: byte-level BPE for "gpt2" vocabularies (GPT-2, StarCoder,
// SmolLM2, Llama 3, Qwen2). encode: split out special tokens, pre-tokenize
// into words, map each word's bytes to GPT-2's byte alphabet, then apply
// merges lowest rank first (rank = position in the merges array). Bytes the
// vocabulary has no symbol for are replaced first (EncodeIssues' rule).
#pragma once

#include <array>
#include <memory>
#include <unordered_map>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace kvscope {

class BpeTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> create(const VocabData& data);

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
  struct Merge {
    int32_t rank;
    int32_t result;  // id of the merged token
  };
  BpeTokenizer(Vocab vocab, std::unique_ptr<PreTokenizer> pre)
      : vocab_(std::move(vocab)), pre_(std::move(pre)) {}
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  // `text` with every character the vocabulary cannot spell replaced by
  // U+FFFD (or left out when U+FFFD cannot be spelled either); `storage`
  // holds the copy when one was needed, else `text` itself is returned.
  std::string_view spellable(std::string_view text, std::string& storage, EncodeIssues& issues) const;
  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank, result
  std::vector<std::string> bytes_;              // [vocab_size] token_bytes for non-special tokens
  std::array<bool, 256> has_byte_{};            // [256] the byte's symbol is a (non-control) token
  std::string replacement_;                     // U+FFFD when its three bytes have symbols, else ""
};

}  // namespace kvscope
