// PreTokenizer: splits text into words before BPE runs on each, with the
// regex list of a row of the pre-tokenizer table (pre_tokenizer_table.h),
// chosen by the GGUF's tokenizer.ggml.pre name. The regexes are applied in
// turn: each splits every piece from the previous step into its matches and
// the text between them (which is kept, never dropped), as llama.cpp's
// unicode_regex_split does.
//
// PCRE2 in UTF + UCP mode gives \p{L}, \p{N}, \p{P}...; compiled once, JIT
// when available. Two rewrites make PCRE2 agree with llama.cpp: \s and \S
// mean llama.cpp's whitespace set (PCRE2's \s also holds U+180E), and $
// matches only at the very end (PCRE2 would also match before a final "\n").
// Remaining difference: \p{..} follow PCRE2's Unicode tables (Unicode 14 in
// Debian 12's PCRE2 10.42) where llama.cpp's are Unicode 15, so letters and
// digits first assigned in Unicode 15 (e.g. CJK Extension H) split differently.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/result.h"
#include "tokenizer/pre_tokenizer_table.h"

namespace kvscope {

class PreTokenizer {
 public:
  // The table's row for `name`; an unknown or unsupported name is an error
  // that names it (and, for names llama.cpp knows, says why).
  static Result<std::unique_ptr<PreTokenizer>> create(std::string_view name);
  static Result<std::unique_ptr<PreTokenizer>> create(const PreTokenizerRule& rule);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Words of `text`, in order; their concatenation is `text`.
  std::vector<std::string_view> split(std::string_view text) const;
  // The table row this pre-tokenizer was built from (flags for BPE).
  const PreTokenizerRule& rule() const { return *rule_; }

 private:
  struct Regex;
  PreTokenizer() = default;
  const PreTokenizerRule* rule_ = nullptr;  // points into the static table
  std::vector<std::unique_ptr<Regex>> regexes_;
};

// `pattern` with \s and \S spelled out as llama.cpp's whitespace set (inside
// and outside character classes); exposed for tests. \S inside a class is an
// error (no table regex needs it).
Result<std::string> with_llama_whitespace(std::string_view pattern);

}  // namespace kvscope
