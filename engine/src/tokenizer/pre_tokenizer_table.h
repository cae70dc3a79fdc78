// The pre-tokenizer table: for each tokenizer.ggml.pre name a BPE vocabulary
// may carry, the regexes that split text into words and the per-name flags
// that change how BPE runs. Data, not code: a new name is a new row.
//
// The facts come from llama.cpp (src/llama-vocab.cpp and src/unicode.cpp of
// the version scripts/fetch_test_data.py pins): which regex list each name
// uses *as llama.cpp runs it* (its adapted patterns, not always the
// tokenizer.json originals), and which names set ignore_merges, add BOS, turn
// spaces into U+2581, and so on. docs/model-formats.md lists the names.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope {

struct PreTokenizerRule {
  std::string_view name;                     // tokenizer.ggml.pre
  std::span<const std::string_view> regexes; // applied in turn (PreTokenizer::split)
  // GPT-2's byte-to-character mapping before BPE; false: BPE on raw UTF-8
  // with SentencePiece-style <0xNN> byte tokens as the fallback (Gemma 4).
  bool byte_level = true;
  // ' ' -> U+2581 before splitting (SentencePiece-style BPE, Gemma 4).
  bool escape_spaces = false;
  // A word that is itself a token is emitted whole, merges or not (Llama 3).
  bool ignore_merges = false;
  // A word made only of newlines that is a token is emitted whole (Gemma 4).
  bool whole_newline_runs = false;
  // llama.cpp's detokenizer clean-up (" ." -> "."); kvscope's decode keeps
  // text as written, so this is recorded for completeness only.
  bool clean_spaces = true;
  // Default for tokenizer.ggml.add_bos_token when the file lacks it.
  std::optional<bool> add_bos_default;
  // Gemma 4: BOS is added even when the file says otherwise (llama.cpp does).
  bool force_add_bos = false;
};

// The row for `name`, or nullptr when llama.cpp knows no such name or kvscope
// does not support it (see unsupported_pre_tokenizer_reason()).
const PreTokenizerRule* find_pre_tokenizer_rule(std::string_view name);

// For names llama.cpp knows but kvscope refuses (custom splitters that are not
// regexes), why; empty for other names.
std::string_view unsupported_pre_tokenizer_reason(std::string_view name);

// Every supported name, in table order (for error messages and docs).
std::vector<std::string_view> supported_pre_tokenizer_names();

}  // namespace kvscope
