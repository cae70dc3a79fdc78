// Python's str operations on UTF-8 text, carrying taint (tainted_string.h):
// whitespace is Python's (Unicode) whitespace and positions are codepoints
// where Python counts them. Case changes map ASCII letters only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja/tainted_string.h"

namespace kvscope::jinja {

// Byte offset of every codepoint, plus s.size() at the end.
std::vector<size_t> codepoint_starts(const std::string& s);

// str.strip/lstrip/rstrip: `chars` (its codepoints) or, when absent, whitespace.
TaintedString strip(const TaintedString& s, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit); no sep: runs of whitespace, empty pieces dropped.
std::vector<TaintedString> split(const TaintedString& s, const std::optional<std::string>& sep, int64_t maxsplit);
// str.replace(old, new, count). Inserted text is tainted where `replacement`
// is, and wholly when the text it replaces was tainted.
TaintedString replace(const TaintedString& s, const std::string& old, const TaintedString& replacement,
                      int64_t count);
TaintedString to_upper(const TaintedString& s);
TaintedString to_lower(const TaintedString& s);
// str.capitalize(): first letter upper, the rest lower.
TaintedString capitalize(const TaintedString& s);
// str.title() when `jinja_filter` is false; Jinja's |title (words split at
// whitespace and -({[<) when true.
TaintedString title(const TaintedString& s, bool jinja_filter);

}  // namespace kvscope::jinja
