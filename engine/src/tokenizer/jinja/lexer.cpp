#include "tokenizer/jinja/lexer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

namespace kvscope::jinja {

namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Jinja joins the source's lines with "\n" (so "\r\n" becomes "\n") and,
// without keep_trailing_newline, drops one final newline.
std::string normalize_newlines(std::string_view source, bool keep_trailing_newline) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string source, const LexOptions& options) : src_(std::move(source)), options_(options) {}

  std::vector<Token> run() {
    size_t pos = 0;
    bool strip_next = false;     // the previous tag ended with "-"
    bool line_starting = true;   // the previous tag's match ended at a line start
    while (pos <= src_.size()) {
      const size_t tag = find_tag(pos);
      std::string text = src_.substr(pos, (tag == std::string::npos ? src_.size() : tag) - pos);
      if (strip_next) {
        const size_t first = std::find_if_not(text.begin(), text.end(), is_space) - text.begin();
        line_starting = first > 0 ? text[first - 1] == '\n' : line_starting;
        text.erase(0, first);
        strip_next = false;
      }
      if (tag == std::string::npos) {
        emit_text(text, pos);
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (modifier == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (options_.lstrip_blocks && kind != '{' && modifier != '+') {
        const size_t line_begin = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((line_begin > 0 || line_starting) &&
            std::all_of(text.begin() + static_cast<long>(line_begin), text.end(), is_space)) {
          text.erase(line_begin);
        }
      }
      emit_text(text, pos);
      size_t after = tag + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
      bool ends_with_minus = false;
      if (kind == '#') {
        const size_t end = src_.find("#}", after);
        if (end == std::string::npos) throw JinjaError("unterminated comment", pos_of(tag));
        ends_with_minus = end > after && src_[end - 1] == '-';
        after = end + 2;
      } else {
        after = lex_tag(kind, tag, after, ends_with_minus);
      }
      line_starting = false;
      if (ends_with_minus) {
        strip_next = true;
      } else if (options_.trim_blocks && kind != '{' && after < src_.size() && src_[after] == '\n') {
        ++after;
        line_starting = true;
      }
      pos = after;
    }
    tokens_.push_back({TokenKind::kEof, "", pos_of(src_.size())});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // Offsets mostly grow, so each call continues from the last one.
  SourcePos pos_of(size_t offset) const {
    if (offset < cached_offset_) {
      cached_offset_ = 0;
      cached_pos_ = SourcePos{};
    }
    SourcePos p = cached_pos_;
    for (size_t i = cached_offset_; i < offset && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++p.line;
        p.column = 1;
      } else {
        ++p.column;
      }
    }
    cached_offset_ = std::min(offset, src_.size());
    cached_pos_ = p;
    return p;
  }

  void emit_text(const std::string& text, size_t offset) {
    if (!text.empty()) tokens_.push_back({TokenKind::kText, text, pos_of(offset)});
  }

  // Lexes the inside of {{ }} or {% %} from `i`; returns the offset after the end.
  size_t lex_tag(char kind, size_t tag, size_t i, bool& ends_with_minus) {
    const char closer = kind == '{' ? '}' : '%';
    tokens_.push_back({kind == '{' ? TokenKind::kVarBegin : TokenKind::kBlockBegin, "", pos_of(tag)});
    int depth = 0;  // brackets open: "}}" inside a dict literal does not end the tag
    while (true) {
      while (i < src_.size() && is_space(src_[i])) ++i;
      if (i >= src_.size()) throw JinjaError("unterminated tag", pos_of(tag));
      const std::string_view rest(src_.data() + i, src_.size() - i);
      if (depth == 0) {
        const std::string end = std::string(1, closer) + "}";
        if (rest.starts_with("-" + end)) {
          ends_with_minus = true;
          tokens_.push_back({kind == '{' ? TokenKind::kVarEnd : TokenKind::kBlockEnd, "", pos_of(i)});
          return i + 3;
        }
        if (rest.starts_with(end)) {
          tokens_.push_back({kind == '{' ? TokenKind::kVarEnd : TokenKind::kBlockEnd, "", pos_of(i)});
          return i + 2;
        }
      }
      const char c = src_[i];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) ++j;
        tokens_.push_back({TokenKind::kName, src_.substr(i, j - i), pos_of(i)});
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        i = lex_number(i);
      } else if (c == '\'' || c == '"') {
        i = lex_string(i);
      } else {
        static constexpr std::array<std::string_view, 6> kTwo = {"**", "//", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (std::string_view two : kTwo) {
          if (rest.starts_with(two)) op = std::string(two);
        }
        if (op.size() == 1 && std::string_view("+-*/%~<>=()[]{},.:|!").find(c) == std::string_view::npos) {
          throw JinjaError(std::string("unexpected character '") + c + "'", pos_of(i));
        }
        if (op == "(" || op == "[" || op == "{") ++depth;
        if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
        tokens_.push_back({TokenKind::kOp, op, pos_of(i)});
        i += op.size();
      }
    }
  }

  size_t lex_number(size_t i) {
    size_t j = i;
    bool is_float = false;
    while (j < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) ++j;
    if (j + 1 < src_.size() && src_[j] == '.' && std::isdigit(static_cast<unsigned char>(src_[j + 1]))) {
      is_float = true;
      ++j;
      while (j < src_.size() && std::isdigit(static_cast<unsigned char>(src_[j]))) ++j;
    }
    if (j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
      size_t k = j + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        is_float = true;
        j = k;
        while (j < src_.size() && std::isdigit(static_cast<unsigned char>(src_[j]))) ++j;
      }
    }
    std::string text = src_.substr(i, j - i);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    tokens_.push_back({is_float ? TokenKind::kFloat : TokenKind::kInt, text, pos_of(i)});
    return j;
  }

  size_t lex_string(size_t i) {
    const char quote = src_[i];
    std::string value;
    size_t j = i + 1;
    for (; j < src_.size() && src_[j] != quote; ++j) {
      if (src_[j] != '\\' || j + 1 >= src_.size()) {
        value += src_[j];
        continue;
      }
      const char e = src_[++j];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // a backslash-newline continues the line
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          // Python's \xNN, \uNNNN, \UNNNNNNNN: a codepoint, written as UTF-8.
          const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          size_t k = 0;
          for (; k < digits && j + 1 + k < src_.size() && std::isxdigit(static_cast<unsigned char>(src_[j + 1 + k])); ++k) {
            const char h = src_[j + 1 + k];
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          if (k != digits || cp > 0x10FFFF) throw JinjaError("bad \\" + std::string(1, e) + " escape in a string", pos_of(j));
          append_utf8(value, cp);
          j += digits;
          break;
        }
        default:
          value += '\\';
          value += e;
      }
    }
    if (j >= src_.size()) throw JinjaError("unterminated string", pos_of(i));
    tokens_.push_back({TokenKind::kString, value, pos_of(i)});
    return j + 1;
  }

  std::string src_;
  LexOptions options_;
  std::vector<Token> tokens_;
  mutable size_t cached_offset_ = 0;
  mutable SourcePos cached_pos_;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) {
  return Lexer(normalize_newlines(source, options.keep_trailing_newline), options).run();
}

}  // namespace kvscope::jinja
