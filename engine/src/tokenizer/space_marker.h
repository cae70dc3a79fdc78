// SentencePiece's text conventions, shared by the SentencePiece tokenizer and
// the BPE tokenizer's space-escaping vocabularies: spaces stored as U+2581
// ("▁") in token text, and byte tokens spelled "<0xNN>".
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace kvscope {

inline constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581

// `text` with every U+2581 turned back into a space.
inline std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpaceMarker.size()) == kSpaceMarker) {
      out += ' ';
      pos += kSpaceMarker.size();
    } else {
      out += text[pos++];
    }
  }
  return out;
}

// Whether a token's text is a byte token, "<0xNN>" with two hex digits.
inline bool is_byte_token_text(std::string_view t) {
  return t.size() == 6 && t.substr(0, 3) == "<0x" && t[5] == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
         std::isxdigit(static_cast<unsigned char>(t[4]));
}

}  // namespace kvscope
