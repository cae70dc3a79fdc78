// Packing of Q2_K..Q6_K rows into the interleaved layout, the Q6_K
// activation half sums, and the scalar reference kernel (kquant_packed.h).
// The GGUF block decoding follows kernels/reference/dequantize.cpp exactly.
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/cpu/kquant_packed.h"
#include "kernels/reference/half.h"

namespace kvscope::detail {
namespace {

// One GGUF super-block decoded: unsigned quants in element order, the
// sub-block scales (8 of 32 elements, or 16 of 16 for Q2_K/Q3_K/Q6_K), mins
// (Q2_K/Q4_K/Q5_K), f16 bits.
struct Superblock {
  uint8_t u[256] = {};
  int scale[16] = {};
  int min[16] = {};
  uint16_t d = 0;
  uint16_t dmin = 0;
};

// Q4_K / Q5_K six-bit scale and min of sub-block j (as the reference).
void k_scale_min(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

void decode_q45_k(const uint8_t* b, bool q5, Superblock* out) {
  out->d = load_u16(b);
  out->dmin = load_u16(b + 2);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + (q5 ? 48 : 16);
  for (int j = 0; j < 8; ++j) {
    k_scale_min(b + 4, j, &out->scale[j], &out->min[j]);
    const uint8_t* chunk = qs + 32 * (j / 2);
    for (int l = 0; l < 32; ++l) {
      int q = (j % 2 == 0) ? (chunk[l] & 15) : (chunk[l] >> 4);
      if (q5) q |= ((qh[l] >> j) & 1) << 4;
      out->u[32 * j + l] = static_cast<uint8_t>(q);
    }
  }
}

void decode_q6_k(const uint8_t* b, Superblock* out) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  for (int n = 0; n < 16; ++n) out->scale[n] = static_cast<int8_t>(b[192 + n]);
  out->d = load_u16(b + 208);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* lo = ql + 64 * h;
    const uint8_t* hi = qh + 32 * h;
    uint8_t* u = out->u + 128 * h;
    for (int l = 0; l < 32; ++l) {
      u[l] = static_cast<uint8_t>((lo[l] & 15) | (((hi[l] >> 0) & 3) << 4));
      u[l + 32] = static_cast<uint8_t>((lo[l + 32] & 15) | (((hi[l] >> 2) & 3) << 4));
      u[l + 64] = static_cast<uint8_t>((lo[l] >> 4) | (((hi[l] >> 4) & 3) << 4));
      u[l + 96] = static_cast<uint8_t>((lo[l + 32] >> 4) | (((hi[l] >> 6) & 3) << 4));
    }
  }
}

// Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], f16 d, dmin;
// element i = 128c + 32s + l is bits 2s..2s+1 of qs[32c + l].
void decode_q2_k(const uint8_t* b, Superblock* out) {
  for (int n = 0; n < 16; ++n) {
    out->scale[n] = b[n] & 15;
    out->min[n] = b[n] >> 4;
  }
  out->d = load_u16(b + 80);
  out->dmin = load_u16(b + 82);
  for (int i = 0; i < 256; ++i) {
    out->u[i] = static_cast<uint8_t>((b[16 + 32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3);
  }
}

// Q3_K: value d * (scale - 32) * (u - 4) with u = low two bits (as Q2_K) |
// hmask bit << 2 (the reference's "no -4 offset" bit).
void decode_q3_k(const uint8_t* b, Superblock* out) {
  const uint8_t* hmask = b;
  const uint8_t* sc = b + 96;
  for (int j = 0; j < 16; ++j) {
    const int low = (j < 8) ? (sc[j] & 15) : (sc[j - 8] >> 4);
    const int high = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
    out->scale[j] = (low | (high << 4)) - 32;
  }
  out->d = load_u16(b + 108);
  for (int i = 0; i < 256; ++i) {
    const int low2 = (b[32 + 32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
    const int hbit = (hmask[i % 32] >> (i / 32)) & 1;
    out->u[i] = static_cast<uint8_t>(low2 | (hbit << 2));
  }
}

void decode(TensorType t, const uint8_t* b, Superblock* out) {
  switch (t) {
    case TensorType::Q2_K: return decode_q2_k(b, out);
    case TensorType::Q3_K: return decode_q3_k(b, out);
    case TensorType::Q6_K: return decode_q6_k(b, out);
    default: return decode_q45_k(b, t == TensorType::Q5_K, out);
  }
}

// Element e (0..31) of sub-block j, lane i, read back from a packed super-block.
int packed_quant(TensorType t, const KquantLayout& l, const uint8_t* s, int j, int i, int e) {
  const int c = e % 4;
  const int v = e / 4;  // vector index: elements 4v..4v+3
  const uint8_t lo = s[l.lo + 256 * j + 64 * (v % 4) + 4 * i + c];
  int u = v < 4 ? (lo & 15) : (lo >> 4);
  if (t == TensorType::Q5_K) u |= ((s[l.hi + 64 * j + 4 * i + c] >> v) & 1) << 4;
  if (t == TensorType::Q6_K) u |= ((s[l.hi + 128 * j + 64 * (v / 4) + 4 * i + c] >> (2 * (v % 4))) & 3) << 4;
  return u;
}

}  // namespace

KquantLayout kquant_layout(TensorType t) {
  KquantLayout l;
  size_t at = 8 * 256;  // lo
  if (t == TensorType::Q5_K) {
    l.hi = at;
    at += 8 * 64;
  } else if (t == TensorType::Q6_K) {
    l.hi = at;
    at += 8 * 128;
  }
  const size_t units = static_cast<size_t>(kquant_scale_units(t));
  l.sc = at;
  at += units * 16;
  if (kquant_has_min(t)) {
    l.mn = at;
    at += units * 16;
  }
  l.d = at;
  at += 32;
  if (kquant_has_min(t)) {
    l.dmin = at;
    at += 32;
  }
  l.bytes = (at + 63) / 64 * 64;
  return l;
}

void kquant_pack_row(TensorType t, const uint8_t* src_row, int64_t row_len, int lane, uint8_t* group) {
  assert(is_packed_kquant(t));
  const KquantLayout l = kquant_layout(t);
  const size_t src_block = static_cast<size_t>(traits_of(t).block_bytes);
  const int i = lane;
  for (int64_t sb = 0; sb < row_len / 256; ++sb) {
    Superblock blk;
    decode(t, src_row + sb * src_block, &blk);
    uint8_t* s = group + sb * l.bytes;
    for (int j = 0; j < 8; ++j) {
      for (int e = 0; e < 32; ++e) {
        const int u = blk.u[32 * j + e];
        const int c = e % 4;
        const int v = e / 4;
        uint8_t& lo = s[l.lo + 256 * j + 64 * (v % 4) + 4 * i + c];
        lo = static_cast<uint8_t>(lo | (v < 4 ? (u & 15) : (u & 15) << 4));
        if (t == TensorType::Q5_K) {
          uint8_t& hi = s[l.hi + 64 * j + 4 * i + c];
          hi = static_cast<uint8_t>(hi | (((u >> 4) & 1) << v));
        } else if (t == TensorType::Q6_K) {
          uint8_t& hi = s[l.hi + 128 * j + 64 * (v / 4) + 4 * i + c];
          hi = static_cast<uint8_t>(hi | (((u >> 4) & 3) << (2 * (v % 4))));
        }
      }
    }
    const int units = kquant_scale_units(t);
    for (int n = 0; n < units; ++n) s[l.sc + 16 * n + i] = static_cast<uint8_t>(blk.scale[n]);
    std::memcpy(s + l.d + 2 * i, &blk.d, 2);
    if (kquant_has_min(t)) {
      for (int n = 0; n < units; ++n) s[l.mn + 16 * n + i] = static_cast<uint8_t>(blk.min[n]);
      std::memcpy(s + l.dmin + 2 * i, &blk.dmin, 2);
    }
  }
}

void kquant_half_sums(const QuantizedActs& acts, int64_t row_len, int64_t num_tokens, int32_t* half_sums,
                      int64_t hs_stride) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int8_t* q = acts.q + t * acts.q_stride;
    for (int64_t h = 0; h < row_len / 16; ++h) {
      int32_t s = 0;
      for (int e = 0; e < 16; ++e) s += q[16 * h + e];
      half_sums[t * hs_stride + h] = s;
    }
  }
}

void kquant_groups_scalar(TensorType t, const uint8_t* w, int64_t g0, int64_t g1, int64_t num_rows,
                          int64_t row_len, const KquantActs& a, int64_t num_tokens, float* y, int64_t y_stride) {
  const KquantLayout l = kquant_layout(t);
  const size_t group_bytes = kquant_group_bytes(t, row_len);
  const bool per16 = kquant_scale_units(t) == 16;
  const int32_t offset = kquant_offset(t);
  const bool has_min = kquant_has_min(t);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* wg = w + g * group_bytes;
    for (int i = 0; i < 16 && 16 * g + i < num_rows; ++i) {
      for (int64_t tok = 0; tok < num_tokens; ++tok) {
        const int8_t* qx = a.acts.q + tok * a.acts.q_stride;
        const float* ds = a.acts.ds + tok * a.acts.ds_stride;
        float acc = 0.0f;
        for (int64_t sb = 0; sb < row_len / 256; ++sb) {
          const uint8_t* s = wg + sb * l.bytes;
          const float d = fp16_to_f32(load_u16(s + l.d + 2 * i));
          const float dmin = has_min ? fp16_to_f32(load_u16(s + l.dmin + 2 * i)) : 0.0f;
          for (int j = 0; j < 8; ++j) {
            const int64_t b = 8 * sb + j;
            int32_t dp[2] = {0, 0};
            for (int e = 0; e < 32; ++e) dp[e / 16] += packed_quant(t, l, s, j, i, e) * qx[32 * b + e];
            const float dx = ds[2 * b];
            if (per16) {
              const int32_t* hs = a.half_sums + tok * a.hs_stride + 2 * b;
              const int32_t sc0 = static_cast<int8_t>(s[l.sc + 16 * (2 * j) + i]);
              const int32_t sc1 = static_cast<int8_t>(s[l.sc + 16 * (2 * j + 1) + i]);
              const int32_t isum = sc0 * (dp[0] - offset * hs[0]) + sc1 * (dp[1] - offset * hs[1]);
              acc = std::fma(static_cast<float>(isum), d * dx, acc);
              if (has_min) {
                const int32_t msum = s[l.mn + 16 * (2 * j) + i] * hs[0] + s[l.mn + 16 * (2 * j + 1) + i] * hs[1];
                acc = std::fma(-static_cast<float>(msum), dmin * dx, acc);
              }
            } else {
              const float sf = static_cast<float>(s[l.sc + 16 * j + i]) * d;
              const float mf = static_cast<float>(s[l.mn + 16 * j + i]) * dmin;
              acc = std::fma(static_cast<float>(dp[0] + dp[1]), sf * dx, acc);
              acc = std::fma(-mf, ds[2 * b + 1], acc);
            }
          }
        }
        y[tok * y_stride + 16 * g + i] = acc;
      }
    }
  }
}

}  // namespace kvscope::detail
