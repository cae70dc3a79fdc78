#include "tokenizer/utf8.h"

namespace kvscope::utf8 {

size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;  // continuation byte, or overlong 0xC0/0xC1
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF5) return 4;
  return 0;
}

int32_t decode_one(std::string_view s, size_t pos, size_t* len) {
  *len = 1;
  const auto lead = static_cast<unsigned char>(s[pos]);
  const size_t n = sequence_length(lead);
  if (n == 0 || pos + n > s.size()) return -1;
  if (n == 1) return lead;
  uint32_t cp = lead & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[pos + i]);
    if ((c & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (c & 0x3F);
  }
  // Reject overlong forms, surrogates and values past U+10FFFF.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return -1;
  *len = n;
  return static_cast<int32_t>(cp);
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t maximal_subpart(std::string_view s, size_t pos) {
  const auto lead = static_cast<unsigned char>(s[pos]);
  const size_t n = sequence_length(lead);
  size_t k = 1;
  while (k < n && pos + k < s.size()) {
    const auto c = static_cast<unsigned char>(s[pos + k]);
    // The second byte's range rules out overlong forms (E0, F0), surrogates
    // (ED) and values past U+10FFFF (F4) before the character is complete.
    unsigned char lo = 0x80, hi = 0xBF;
    if (k == 1) {
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    }
    if (c < lo || c > hi) break;
    ++k;
  }
  return k;
}

std::string sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    size_t len = 1;
    if (decode_one(s, pos, &len) < 0) {
      append(out, 0xFFFD);
      len = maximal_subpart(s, pos);
    } else {
      out.append(s.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

size_t incomplete_tail(std::string_view s) {
  // A character is at most 4 bytes, so only the last 3 bytes can start an
  // unfinished one.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation: keep looking for the lead
    const size_t need = sequence_length(c);
    if (need > back) {
      // Only hold bytes that can still become a valid character.
      for (size_t i = 1; i < back; ++i)
        if ((static_cast<unsigned char>(s[n - back + i]) & 0xC0) != 0x80) return 0;
      return back;
    }
    return 0;
  }
  return 0;
}

}  // namespace kvscope::utf8
