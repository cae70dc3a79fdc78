#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tokenizer/utf8.h"

namespace kvscope {

namespace {
// llama.cpp's whitespace code points (its unicode_set_whitespace: the Unicode
// White_Space property), as items of a character class.
constexpr std::string_view kWhitespaceItems =
    R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
}  // namespace

Result<std::string> with_llama_whitespace(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhitespaceItems) : fmt::format("[{}]", kWhitespaceItems);
      } else if (e == 'S') {
        if (in_class) return Error{fmt::format("pre-tokenizer regex /{}/: \\S inside a character class", pattern)};
        out += fmt::format("[^{}]", kWhitespaceItems);
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    // A ']' right after '[' or '[^' is a literal; the table never writes one,
    // so classes simply end at the next unescaped ']'.
    if (c == '[' && !in_class) in_class = true;
    else if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(std::string_view name) {
  if (const PreTokenizerRule* rule = find_pre_tokenizer_rule(name)) return create(*rule);
  if (std::string_view why = unsupported_pre_tokenizer_reason(name); !why.empty())
    return Error{fmt::format("tokenizer: pre-tokenizer '{}' is not supported: {}", name, why)};
  return Error{fmt::format("tokenizer: pre-tokenizer '{}' is not supported (known: {})", name,
                           fmt::join(supported_pre_tokenizer_names(), ", "))};
}

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(const PreTokenizerRule& rule) {
  std::unique_ptr<PreTokenizer> p(new PreTokenizer());
  p->rule_ = &rule;
  for (std::string_view source : rule.regexes) {
    auto pattern = with_llama_whitespace(source);
    if (!pattern) return Error{pattern.error()};
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // MATCH_INVALID_UTF: malformed input bytes are never matched instead of
    // failing the whole match; they end up in the "between" pieces.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern->data()), pattern->size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY,
                                     &error_code, &error_offset, nullptr);
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      return Error{fmt::format("pre-tokenizer '{}': regex /{}/ at offset {}: {}", rule.name, source, error_offset,
                               reinterpret_cast<const char*>(message))};
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: falls back to the interpreter
    auto r = std::make_unique<Regex>();
    r->code = code;
    p->regexes_.push_back(std::move(r));
  }
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
    next.reserve(pieces.size() * 2);
    for (std::string_view piece : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t unmatched = 0;  // start of the text not yet emitted
      size_t search = 0;     // where the next match may start
      while (search < piece.size()) {
        const int rc = pcre2_match(regex->code, subject, piece.size(), search, 0, md, nullptr);
        if (rc < 0) break;  // no further match (or a matcher limit): the rest stays one piece
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t begin = ov[0], end = ov[1];
        if (end == begin) {
          // An empty match splits nothing (llama.cpp's words of length 0
          // encode to nothing); search again one character on.
          size_t len = 1;
          utf8::decode_one(piece, begin, &len);
          search = begin + len;
          continue;
        }
        if (begin > unmatched) next.push_back(piece.substr(unmatched, begin - unmatched));
        next.push_back(piece.substr(begin, end - begin));
        unmatched = search = end;
      }
      if (unmatched < piece.size()) next.push_back(piece.substr(unmatched));
    }
    pcre2_match_data_free(md);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace kvscope
