// BpeTokenizer: BPE for "gpt2" vocabularies (GPT-2, StarCoder, SmolLM2,
// Llama 3, Qwen2, DeepSeek, Falcon, Command-R, ...) and "gemma4" ones.
// encode: split out special tokens, pre-tokenize into words (the table row
// for tokenizer.ggml.pre, pre_tokenizer_table.h), then per word apply merges
// lowest rank first (rank = position in the merges array), as llama.cpp's
// llm_tokenizer_bpe_session does:
//  - byte-level rows map each byte to GPT-2's byte alphabet first; Gemma 4's
//    row works on raw UTF-8 with spaces written U+2581;
//  - merges go by text: a merge fires when its two halves are adjacent, even
//    if a half (or the result) is not itself a token; a final piece that is
//    not a token falls back to its bytes' tokens (<0xNN> in Gemma 4);
//  - ignore_merges rows emit a word that is a token whole.
// Bytes the vocabulary has no token for are replaced first (EncodeIssues).
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

  std::vector<int32_t> encode_with_plain_ranges(std::string_view text, std::span<const TextRange> plain,
                                                EncodeIssues* issues) const override;
  std::string token_bytes(int32_t id, bool render_special = false) const override;
  int32_t vocab_size() const override { return vocab_.size(); }
  int32_t bos_id() const override { return vocab_.data().bos_id; }
  int32_t eos_id() const override { return vocab_.data().eos_id; }
  bool add_bos() const override { return vocab_.data().add_bos || pre_->rule().force_add_bos; }
  bool add_space_prefix() const override { return false; }  // llama.cpp never prefixes BPE text
  bool is_control(int32_t id) const override { return vocab_.is_control(id); }
  bool is_eog(int32_t id) const override { return vocab_.is_eog(id); }
  std::optional<int32_t> token_id(std::string_view piece) const override { return vocab_.find(piece); }
  std::string_view token_text(int32_t id) const override { return vocab_.text(id); }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // symbol id of the merged text
  };
  struct Scratch;  // per-call buffers, reused across the words of one encode()

  BpeTokenizer(Vocab vocab, std::unique_ptr<PreTokenizer> pre) : vocab_(std::move(vocab)), pre_(std::move(pre)) {}
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  // Symbol id of a piece of (mapped) text: its token id, an id above the
  // vocabulary for a text that only merges know, or -1.
  int32_t symbol_id(std::string_view text) const;
  int32_t intern(std::string_view text);
  // `text` with every character the vocabulary cannot spell replaced by
  // U+FFFD (or left out when U+FFFD cannot be spelled either); `storage`
  // holds the copy when one was needed, else `text` itself is returned.
  std::string_view spellable(std::string_view text, std::string& storage, EncodeIssues& issues) const;
  // Appends the ids of one pre-tokenized word (raw bytes, spaces escaped).
  void encode_word(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const;
  // Appends the byte tokens of mapped text that is no token.
  void append_byte_fallback(std::string_view mapped, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::unique_ptr<PreTokenizer> pre_;
  bool byte_level_ = true;
  TokenIdMap extra_symbols_;                    // texts merges use that are no token -> id >= vocab size
  std::unordered_map<uint64_t, Merge> merges_;  // (left symbol, right symbol) -> rank, result
  std::array<int32_t, 256> byte_symbol_{};      // [256] symbol id of a byte's byte-level character, -1: none
  std::array<int32_t, 256> byte_token_{};       // [256] token a byte falls back to, -1: none
  std::vector<std::string> bytes_;              // [vocab_size] token_bytes for shown tokens
  std::string replacement_;                     // U+FFFD when its three bytes have tokens, else ""
};

}  // namespace kvscope
