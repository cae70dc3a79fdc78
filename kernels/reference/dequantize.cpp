// Reference dequantisation, one function per block type. See dequantize.h.
#include "kernels/reference/dequantize.h"

#include <cassert>

#include "kernels/reference/half.h"

namespace kvscope {
namespace {

// Q4_0 / Q4_1 / Q5_0 / Q5_1: 32 elements; byte j's low nibble is element j,
// its high nibble element j + 16; Q5 adds bit j of a u32 as fifth bit of element j.
void block_q4_0(const uint8_t* b, float* y) {
  const float d = fp16_to_f32(load_u16(b));
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 15) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

void block_q4_1(const uint8_t* b, float* y) {
  const float d = fp16_to_f32(load_u16(b));
  const float m = fp16_to_f32(load_u16(b + 2));
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 15) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

void block_q5_0(const uint8_t* b, float* y) {
  const float d = fp16_to_f32(load_u16(b));
  const uint32_t qh = load_u32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    y[j] = static_cast<float>(lo - 16) * d;
    y[j + 16] = static_cast<float>(hi - 16) * d;
  }
}

void block_q5_1(const uint8_t* b, float* y) {
  const float d = fp16_to_f32(load_u16(b));
  const float m = fp16_to_f32(load_u16(b + 2));
  const uint32_t qh = load_u32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    y[j] = static_cast<float>(lo) * d + m;
    y[j + 16] = static_cast<float>(hi) * d + m;
  }
}

void block_q8_0(const uint8_t* b, float* y) {
  const float d = fp16_to_f32(load_u16(b));
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(qs[j]) * d;
}

// Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], f16 d, f16 dmin.
// 16 sub-blocks of 16. The 64 qs bytes are two chunks of 32; in chunk c,
// shift s (0, 2, 4, 6) of byte l gives element 128c + 32(s/2) + l.
void block_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = fp16_to_f32(load_u16(b + 80));
  const float dmin = fp16_to_f32(load_u16(b + 82));
  for (int i = 0; i < 256; ++i) {
    const int chunk = i / 128;
    const int shift = 2 * ((i % 128) / 32);
    const int l = i % 32;
    const int q = (qs[32 * chunk + l] >> shift) & 3;
    const uint8_t sc = scales[i / 16];
    y[i] = d * static_cast<float>(sc & 15) * static_cast<float>(q) -
           dmin * static_cast<float>(sc >> 4);
  }
}

// Q3_K: hmask[32], qs[64], scales[12] (16 six-bit scales), f16 d. Low two bits
// as in Q2_K; hmask bit (i / 32) of byte (i % 32) set means no -4 offset.
// Scale j: low 4 bits from byte j (j < 8) low nibble or byte j-8 high nibble,
// top 2 bits from byte 8 + (j % 4), bits 2*(j / 4).
void block_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = fp16_to_f32(load_u16(b + 108));
  int scales[16];
  for (int j = 0; j < 16; ++j) {
    const int low = (j < 8) ? (sc[j] & 15) : (sc[j - 8] >> 4);
    const int high = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = (low | (high << 4)) - 32;
  }
  for (int i = 0; i < 256; ++i) {
    const int chunk = i / 128;
    const int shift = 2 * ((i % 128) / 32);
    const int l = i % 32;
    int q = (qs[32 * chunk + l] >> shift) & 3;
    if (((hmask[l] >> (i / 32)) & 1) == 0) q -= 4;
    y[i] = d * static_cast<float>(scales[i / 16]) * static_cast<float>(q);
  }
}

// Q4_K / Q5_K six-bit scale and min of sub-block j (docs/model-formats.md).
void k_scale_min(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

void block_q4_k(const uint8_t* b, float* y) {
  const float d = fp16_to_f32(load_u16(b));
  const float dmin = fp16_to_f32(load_u16(b + 2));
  const uint8_t* s = b + 4;
  const uint8_t* qs = b + 16;
  for (int sub = 0; sub < 8; ++sub) {
    int scale = 0;
    int min = 0;
    k_scale_min(s, sub, &scale, &min);
    const uint8_t* chunk = qs + 32 * (sub / 2);
    for (int l = 0; l < 32; ++l) {
      const int q = (sub % 2 == 0) ? (chunk[l] & 15) : (chunk[l] >> 4);
      y[32 * sub + l] = d * static_cast<float>(scale) * static_cast<float>(q) -
                        dmin * static_cast<float>(min);
    }
  }
}

void block_q5_k(const uint8_t* b, float* y) {
  const float d = fp16_to_f32(load_u16(b));
  const float dmin = fp16_to_f32(load_u16(b + 2));
  const uint8_t* s = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int sub = 0; sub < 8; ++sub) {
    int scale = 0;
    int min = 0;
    k_scale_min(s, sub, &scale, &min);
    const uint8_t* chunk = qs + 32 * (sub / 2);
    for (int l = 0; l < 32; ++l) {
      int q = (sub % 2 == 0) ? (chunk[l] & 15) : (chunk[l] >> 4);
      q |= ((qh[l] >> sub) & 1) << 4;  // bit 2c (low nibble) or 2c+1 (high) = bit sub
      y[32 * sub + l] = d * static_cast<float>(scale) * static_cast<float>(q) -
                        dmin * static_cast<float>(min);
    }
  }
}

void block_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = fp16_to_f32(load_u16(b + 208));
  for (int h = 0; h < 2; ++h) {
    const uint8_t* lo = ql + 64 * h;
    const uint8_t* hi = qh + 32 * h;
    const int8_t* s = sc + 8 * h;
    float* out = y + 128 * h;
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q0 = ((lo[l] & 15) | (((hi[l] >> 0) & 3) << 4)) - 32;
      const int q1 = ((lo[l + 32] & 15) | (((hi[l] >> 2) & 3) << 4)) - 32;
      const int q2 = ((lo[l] >> 4) | (((hi[l] >> 4) & 3) << 4)) - 32;
      const int q3 = ((lo[l + 32] >> 4) | (((hi[l] >> 6) & 3) << 4)) - 32;
      out[l] = d * static_cast<float>(s[is]) * static_cast<float>(q0);
      out[l + 32] = d * static_cast<float>(s[is + 2]) * static_cast<float>(q1);
      out[l + 64] = d * static_cast<float>(s[is + 4]) * static_cast<float>(q2);
      out[l + 96] = d * static_cast<float>(s[is + 6]) * static_cast<float>(q3);
    }
  }
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_fn(TensorType type) {
  switch (type) {
    case TensorType::Q4_0: return block_q4_0;
    case TensorType::Q4_1: return block_q4_1;
    case TensorType::Q5_0: return block_q5_0;
    case TensorType::Q5_1: return block_q5_1;
    case TensorType::Q8_0: return block_q8_0;
    case TensorType::Q2_K: return block_q2_k;
    case TensorType::Q3_K: return block_q3_k;
    case TensorType::Q4_K: return block_q4_k;
    case TensorType::Q5_K: return block_q5_k;
    case TensorType::Q6_K: return block_q6_k;
    default: return nullptr;
  }
}

}  // namespace

void dequantize_row_ref(TensorType type, const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  switch (type) {
    case TensorType::F32:
      for (int64_t i = 0; i < n; ++i) dst[i] = bits_to_f32(load_u32(p + 4 * i));
      return;
    case TensorType::F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(load_u16(p + 2 * i));
      return;
    case TensorType::BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(p + 2 * i));
      return;
    default:
      break;
  }
  const TensorTypeTraits& t = traits_of(type);
  const BlockFn fn = block_fn(type);
  assert(fn != nullptr && "dequantize_row_ref: unsupported type");
  assert(n % t.block_elems == 0 && "dequantize_row_ref: n must be a multiple of the block size");
  for (int64_t b = 0; b < n / t.block_elems; ++b) {
    fn(p + b * t.block_bytes, dst + b * t.block_elems);
  }
}

}  // namespace kvscope
