#include "kv/prefix_hash.h"

namespace kvscope {
namespace {

// splitmix64 finaliser: a cheap full-avalanche 64-bit mix.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t prefix_hash_seed(std::string_view salt) {
  uint64_t h = 0x6b7673636f706521ull;  // "kvscope!"
  for (const char c : salt) h = mix(h ^ static_cast<uint8_t>(c));
  return h;
}

uint64_t prefix_hash(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent ^ (static_cast<uint64_t>(tokens.size()) << 32));
  for (const int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return h == 0 ? 1 : h;
}

}  // namespace kvscope
