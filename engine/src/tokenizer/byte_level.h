// GPT-2's byte-level alphabet: every byte gets a printable Unicode character
// (printable ASCII and Latin-1 map to themselves, the other 68 bytes to
// U+0100..U+0143), so that BPE merges can be written as text ("Ġthe" = " the").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvscope::byte_level {

// Raw bytes -> their byte-level characters, as UTF-8.
std::string encode(std::string_view bytes);
// Byte-level text -> raw bytes; nullopt if a character is not in the alphabet
// (e.g. an added token stored as plain text).
std::optional<std::string> decode(std::string_view text);

}  // namespace kvscope::byte_level
