// Scalar f16 / bf16 <-> f32 conversions by bit manipulation, portable and exact
// (IEEE binary16 round-to-nearest-even on the way down). Used by the reference
// kernels, the scalar fallbacks and the tests that build quantised blocks.
#pragma once

#include <cstdint>
#include <cstring>

namespace kvscope {

inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp != 0) return bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_to_f32(sign);  // +-0
  // Subnormal: value = mant * 2^-24, exact in f32.
  const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return (sign != 0u) ? -v : v;
}

inline uint16_t f32_to_fp16(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // result is subnormal or zero: round(abs_value * 2^24)
    const float v = bits_to_f32(abs) * 16777216.0f;  // exact scaling by a power of two
    // v < 1024; round half to even with the FPU's default rounding.
    const float r = v + 8388608.0f - 8388608.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  const uint32_t lsb = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xfffu + lsb;
  return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet nan
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Little-endian loads from an unaligned byte pointer.
inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace kvscope
