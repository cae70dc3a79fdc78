#include "tokenizer/jinja/text_ops.h"

#include <algorithm>
#include <stdexcept>

namespace kvscope::jinja {

namespace {

// Strings built here stop growing past this (the evaluator then reports
// them; its own output limit is 16 MiB).
constexpr size_t kMaxBuiltString = size_t{64} << 20;

uint32_t decode_at(const std::string& s, size_t begin, size_t end) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const size_t n = end - begin;
  if (n == 1) return byte(begin);
  uint32_t cp = byte(begin) & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
  for (size_t i = begin + 1; i < end; ++i) cp = (cp << 6) | (byte(i) & 0x3f);
  return cp;
}

// Python's str.isspace().
bool is_py_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
         cp == 0x3000;
}

bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char ascii_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; }
char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

}  // namespace

std::vector<size_t> codepoint_starts(const std::string& s) {
  std::vector<size_t> starts;
  starts.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) starts.push_back(i);
  }
  starts.push_back(s.size());
  return starts;
}

TaintedString strip(const TaintedString& s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::string& t = s.text();
  const std::vector<size_t> starts = codepoint_starts(t);
  std::vector<uint32_t> set;
  if (chars) {
    const std::vector<size_t> cs = codepoint_starts(*chars);
    for (size_t i = 0; i + 1 < cs.size(); ++i) set.push_back(decode_at(*chars, cs[i], cs[i + 1]));
  }
  auto strippable = [&](size_t k) {
    const uint32_t cp = decode_at(t, starts[k], starts[k + 1]);
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_py_space(cp);
  };
  size_t first = 0, last = starts.size() - 1;  // codepoint indices [first, last)
  if (left) {
    while (first < last && strippable(first)) ++first;
  }
  if (right) {
    while (last > first && strippable(last - 1)) --last;
  }
  return s.slice(starts[first], starts[last]);
}

std::vector<TaintedString> split(const TaintedString& s, const std::optional<std::string>& sep, int64_t maxsplit) {
  const std::string& t = s.text();
  std::vector<TaintedString> parts;
  if (sep) {
    size_t begin = 0;
    for (size_t pos = t.find(*sep); pos != std::string::npos && !sep->empty(); pos = t.find(*sep, begin)) {
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) break;
      parts.push_back(s.slice(begin, pos));
      begin = pos + sep->size();
    }
    parts.push_back(s.slice(begin, t.size()));
    return parts;
  }
  const std::vector<size_t> starts = codepoint_starts(t);
  const size_t n = starts.size() - 1;
  auto space = [&](size_t k) { return is_py_space(decode_at(t, starts[k], starts[k + 1])); };
  size_t k = 0;
  while (k < n) {
    while (k < n && space(k)) ++k;
    if (k == n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
      // The rest, right-stripped, is the last piece.
      size_t end = n;
      while (end > k && space(end - 1)) --end;
      parts.push_back(s.slice(starts[k], starts[end]));
      break;
    }
    const size_t begin = k;
    while (k < n && !space(k)) ++k;
    parts.push_back(s.slice(starts[begin], starts[k]));
  }
  return parts;
}

TaintedString replace(const TaintedString& s, const std::string& old, const TaintedString& replacement,
                      int64_t count) {
  const std::string& t = s.text();
  TaintedString out;
  auto insert = [&](size_t from, size_t to) {
    if (s.any_tainted(from, to)) {
      out.append_marked(replacement.text(), true);
    } else {
      out.append(replacement);
    }
  };
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts the replacement between every codepoint and at both ends.
    const std::vector<size_t> starts = codepoint_starts(t);
    for (size_t k = 0; k < starts.size(); ++k) {
      if (out.size() > kMaxBuiltString) throw std::length_error("replace: string too long");
      if (count < 0 || done < count) {
        insert(starts[k], starts[k]);
        ++done;
      }
      if (k + 1 < starts.size()) out.append_slice(s, starts[k], starts[k + 1]);
    }
    return out;
  }
  size_t begin = 0;
  for (size_t pos = t.find(old); pos != std::string::npos && (count < 0 || done < count); pos = t.find(old, begin)) {
    if (out.size() > kMaxBuiltString) throw std::length_error("replace: string too long");
    out.append_slice(s, begin, pos);
    insert(pos, pos + old.size());
    begin = pos + old.size();
    ++done;
  }
  out.append_slice(s, begin, t.size());
  return out;
}

TaintedString to_upper(const TaintedString& s) {
  std::string t = s.text();
  std::transform(t.begin(), t.end(), t.begin(), ascii_upper);
  return s.with_same_length_text(std::move(t));
}

TaintedString to_lower(const TaintedString& s) {
  std::string t = s.text();
  std::transform(t.begin(), t.end(), t.begin(), ascii_lower);
  return s.with_same_length_text(std::move(t));
}

TaintedString capitalize(const TaintedString& s) {
  std::string t = s.text();
  std::transform(t.begin(), t.end(), t.begin(), ascii_lower);
  if (!t.empty()) t[0] = ascii_upper(t[0]);
  return s.with_same_length_text(std::move(t));
}

TaintedString title(const TaintedString& s, bool jinja_filter) {
  std::string t = s.text();
  bool word_start = true;
  for (char& c : t) {
    if (jinja_filter) {
      const bool boundary = std::string_view(" \t\n\r\f\v-({[<").find(c) != std::string_view::npos;
      c = word_start ? ascii_upper(c) : ascii_lower(c);
      word_start = boundary;
    } else {
      const bool letter = is_ascii_alpha(c) || (static_cast<unsigned char>(c) >= 0x80);
      c = (word_start && letter) ? ascii_upper(c) : ascii_lower(c);
      word_start = !letter;
    }
  }
  return s.with_same_length_text(std::move(t));
}

}  // namespace kvscope::jinja
