#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>
#include <unordered_map>

#include "tokenizer/utf8.h"

namespace kvscope::byte_level {

namespace {
struct Tables {
  std::array<uint32_t, 256> byte_to_cp{};
  std::unordered_map<uint32_t, unsigned char> cp_to_byte;
  std::array<std::string, 256> byte_to_utf8;
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    // Bytes that are already visible characters keep their code point.
    auto visible = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      t.byte_to_cp[b] = visible(b) ? static_cast<uint32_t>(b) : next++;
      t.cp_to_byte[t.byte_to_cp[b]] = static_cast<unsigned char>(b);
      utf8::append(t.byte_to_utf8[b], t.byte_to_cp[b]);
    }
    return t;
  }();
  return t;
}
}  // namespace

std::string encode(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.byte_to_utf8[static_cast<unsigned char>(c)];
  return out;
}

std::optional<std::string> decode(std::string_view text) {
  const Tables& t = tables();
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 1;
    const int32_t cp = utf8::decode_one(text, pos, &len);
    if (cp < 0) return std::nullopt;
    auto it = t.cp_to_byte.find(static_cast<uint32_t>(cp));
    if (it == t.cp_to_byte.end()) return std::nullopt;
    out += static_cast<char>(it->second);
    pos += len;
  }
  return out;
}

}  // namespace kvscope::byte_level
