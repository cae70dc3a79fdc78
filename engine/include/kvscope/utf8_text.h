// UTF-8 decoding for front ends: the engine's own rule (the tokenizers'),
// so that what a front end calls valid UTF-8 is what the engine does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvscope {

// Decodes the character at s[pos] (pos < s.size()): sets *len to its bytes
// and returns its code point; for bytes that are not well-formed UTF-8
// (overlong, a surrogate, past U+10FFFF, cut short) returns -1 with *len = 1.
int32_t decode_utf8_char(std::string_view s, size_t pos, size_t* len);

}  // namespace kvscope
