// PreTokenizer: splits text into words before byte-level BPE runs on each,
// chosen by the GGUF's tokenizer.ggml.pre name. A pre-tokenizer is a list of
// regexes applied in turn: each splits every piece from the previous step
// into its matches and the text between them (which is kept, never dropped).
// PCRE2 in UTF + UCP mode gives \p{L}, \p{N} and Unicode \s; compiled once,
// JIT when available.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/result.h"

namespace kvscope {

class PreTokenizer {
 public:
  // Known names: default, gpt2, gpt-2, smollm, starcoder, llama-bpe, llama3,
  // qwen2. Anything else is an error that names it.
  static Result<std::unique_ptr<PreTokenizer>> create(const std::string& name);
  // Builds one from explicit patterns (used for tokenizer.json).
  static Result<std::unique_ptr<PreTokenizer>> from_patterns(const std::vector<std::string>& patterns);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Words of `text`, in order; their concatenation is `text`.
  std::vector<std::string_view> split(std::string_view text) const;
  // Llama 3 style: a word that is itself a token skips merging.
  bool ignore_merges() const { return ignore_merges_; }

 private:
  struct Regex;
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Regex>> regexes_;
  bool ignore_merges_ = false;
};

}  // namespace kvscope
