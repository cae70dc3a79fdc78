#include "kernels/cpu/kv_cache_type.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#endif

#include "kernels/reference/half.h"

namespace kvscope {
namespace {

uint16_t read_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void write_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }

}  // namespace

const char* kv_cache_type_name(KvCacheType type) {
  switch (type) {
    case KvCacheType::F32: return "f32";
    case KvCacheType::F16: return "f16";
    case KvCacheType::BF16: return "bf16";
    case KvCacheType::Q8_0: return "q8_0";
  }
  return "unknown";
}

size_t kv_row_bytes(KvCacheType type, int64_t n) {
  switch (type) {
    case KvCacheType::F32: return static_cast<size_t>(n) * 4;
    case KvCacheType::F16:
    case KvCacheType::BF16: return static_cast<size_t>(n) * 2;
    case KvCacheType::Q8_0: return static_cast<size_t>(n / kQ8BlockElems) * kQ8BlockBytes;
  }
  return 0;
}

bool kv_type_fits_head_dim(KvCacheType type, int32_t head_dim) {
  return type != KvCacheType::Q8_0 || head_dim % kQ8BlockElems == 0;
}

// Writing happens once per token and layer: the scalar conversions (the
// reference ones, exact) are fast enough and need no vector twin to agree with.
void store_kv_row(KvCacheType type, const float* src, int64_t n, uint8_t* dst) {
  switch (type) {
    case KvCacheType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case KvCacheType::F16:
      for (int64_t i = 0; i < n; ++i) write_u16(dst + 2 * i, f32_to_fp16(src[i]));
      return;
    case KvCacheType::BF16:
      for (int64_t i = 0; i < n; ++i) write_u16(dst + 2 * i, f32_to_bf16(src[i]));
      return;
    case KvCacheType::Q8_0:
      assert(n % kQ8BlockElems == 0);
      for (int64_t b = 0; b < n / kQ8BlockElems; ++b, src += kQ8BlockElems, dst += kQ8BlockBytes) {
        float amax = 0.0f;
        for (int32_t i = 0; i < kQ8BlockElems; ++i) amax = std::max(amax, std::fabs(src[i]));
        // Quantise with the scale as stored (f16), not the exact one as
        // GGUF's quantiser does: every value is then within half a step of
        // what load_kv_row returns, and amax/d16 stays below 127.5.
        const uint16_t d16 = f32_to_fp16(amax / 127.0f);
        const float d = fp16_to_f32(d16);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        write_u16(dst, d16);
        for (int32_t i = 0; i < kQ8BlockElems; ++i) {
          dst[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(src[i] * id)));
        }
      }
      return;
  }
}

// Reading is attention's inner loop for every type but f32. Each vector path
// computes exactly what its scalar tail does (exact widening; one multiply).
void load_kv_row(KvCacheType type, const uint8_t* src, int32_t n, float* dst) {
  int32_t i = 0;
  switch (type) {
    case KvCacheType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case KvCacheType::F16:
#if defined(__AVX2__) && defined(__F16C__)
      for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
      }
#endif
      for (; i < n; ++i) dst[i] = fp16_to_f32(read_u16(src + 2 * i));
      return;
    case KvCacheType::BF16:
#if defined(__AVX2__) && defined(__F16C__)
      for (; i + 8 <= n; i += 8) {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
      }
#endif
      for (; i < n; ++i) dst[i] = bf16_to_f32(read_u16(src + 2 * i));
      return;
    case KvCacheType::Q8_0:
      assert(n % kQ8BlockElems == 0);
      for (int32_t b = 0; b < n / kQ8BlockElems; ++b, src += kQ8BlockBytes, dst += kQ8BlockElems) {
        const float d = fp16_to_f32(read_u16(src));
        int32_t j = 0;
#if defined(__AVX2__) && defined(__F16C__)
        const __m256 dv = _mm256_set1_ps(d);
        for (; j < kQ8BlockElems; j += 8) {
          const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 2 + j));
          _mm256_storeu_ps(dst + j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), dv));
        }
#endif
        for (; j < kQ8BlockElems; ++j) dst[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
      }
      return;
  }
}

}  // namespace kvscope
