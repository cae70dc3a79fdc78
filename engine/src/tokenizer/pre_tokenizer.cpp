#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

namespace kvscope {

namespace {
// GPT-2's split: English contractions, letter runs, number runs, other
// symbols, each optionally with one leading space; whitespace runs leave
// their last space for the next word ("\s+(?!\S)"), and "\s+" catches the rest.
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Every digit on its own (StarCoder, SmolLM2), applied before kGpt2.
constexpr const char* kDigits = R"(\p{N})";
// Llama 3: case-insensitive contractions, a letter run may take one leading
// non-letter, numbers in groups of up to three, newlines kept together.
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: as Llama 3 but one digit per word.
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::from_patterns(
    const std::vector<std::string>& patterns) {
  std::unique_ptr<PreTokenizer> p(new PreTokenizer());
  for (const std::string& pattern : patterns) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // MATCH_INVALID_UTF: malformed input bytes are never matched instead of
    // failing the whole match; they end up in the "between" pieces.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code,
                                     &error_offset, nullptr);
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      return Error{fmt::format("pre-tokenizer regex /{}/ at offset {}: {}", pattern, error_offset,
                               reinterpret_cast<const char*>(message))};
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: falls back to the interpreter
    auto r = std::make_unique<Regex>();
    r->code = code;
    p->regexes_.push_back(std::move(r));
  }
  return p;
}

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(const std::string& name) {
  std::vector<std::string> patterns;
  bool ignore_merges = false;
  if (name == "default" || name == "gpt2" || name == "gpt-2") {
    patterns = {kGpt2};
  } else if (name == "smollm" || name == "starcoder") {
    patterns = {kDigits, kGpt2};
  } else if (name == "llama-bpe" || name == "llama3") {
    patterns = {kLlama3};
    ignore_merges = true;
  } else if (name == "qwen2") {
    patterns = {kQwen2};
  } else {
    return Error{fmt::format(
        "tokenizer: pre-tokenizer '{}' is not supported (known: default, gpt2, gpt-2, smollm, "
        "starcoder, llama-bpe, llama3, qwen2)",
        name)};
  }
  auto p = from_patterns(patterns);
  if (p) (*p)->ignore_merges_ = ignore_merges;
  return p;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& regex : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex->code, nullptr);
    next.clear();
    for (std::string_view piece : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t pos = 0;
      while (pos < piece.size()) {
        const int rc = pcre2_match(regex->code, subject, piece.size(), pos, 0, md, nullptr);
        if (rc < 0) break;  // no further match (or a matcher limit): the rest stays one piece
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        size_t begin = ov[0], end = ov[1];
        if (end == begin) {  // empty match cannot happen with these patterns; guard anyway
          ++pos;
          continue;
        }
        if (begin > pos) next.push_back(piece.substr(pos, begin - pos));
        next.push_back(piece.substr(begin, end - begin));
        pos = end;
      }
      if (pos < piece.size()) next.push_back(piece.substr(pos));
    }
    pcre2_match_data_free(md);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace kvscope
