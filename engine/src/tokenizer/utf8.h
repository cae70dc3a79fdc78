// Small UTF-8 helpers shared by the tokenizers and the streaming detokeniser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvscope::utf8 {

// Length of the sequence a lead byte announces (1..4), 0 for a byte that
// cannot start one (continuation byte or 0xF8..0xFF).
size_t sequence_length(unsigned char lead);
// Decodes one character at s[pos]; on success sets *len and returns the code
// point, on malformed input returns -1 with *len = 1.
int32_t decode_one(std::string_view s, size_t pos, size_t* len);
// Appends code point cp as UTF-8.
void append(std::string& out, uint32_t cp);
// The bytes at s[pos] that begin a character and could still have gone on
// to complete it (at least 1): what one U+FFFD replaces (Unicode's
// "substitution of maximal subparts", Python's and browsers' rule).
size_t maximal_subpart(std::string_view s, size_t pos);
// Copies s, replacing each maximal subpart of a malformed sequence with one
// U+FFFD: a character cut after 2 of its 4 bytes is one U+FFFD, not two.
std::string sanitize(std::string_view s);
// Bytes at the end of s that begin a character still waiting for its
// continuation bytes (0 when s ends on a boundary or in invalid bytes).
size_t incomplete_tail(std::string_view s);

}  // namespace kvscope::utf8
