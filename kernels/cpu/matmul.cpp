// matmul(): picks the kernel for the weight type and CPU level, quantises the
// activations once per call, and splits the output rows over the pool in
// tiles of kTileRows (never the reduction dimension). See matmul.h.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/matmul_internal.h"

namespace kvscope {
namespace {

constexpr int64_t kTileRows = 4;       // rows per parallel task
constexpr int64_t kDequantRows = 8;    // rows dequantised at once on the f32 fallback path

bool is_float_type(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

bool has_int8_kernel(TensorType t) {
  return t == TensorType::Q4_0 || t == TensorType::Q4_1 || t == TensorType::Q5_0 ||
         t == TensorType::Q5_1 || t == TensorType::Q8_0;
}

using FloatTile = void (*)(TensorType, const uint8_t*, size_t, int64_t, int64_t, const float*, int64_t,
                           float*, int64_t);

FloatTile float_tile(CpuLevel level) {
#if defined(__x86_64__) || defined(_M_X64)
  if (level == CpuLevel::kAvx512) return detail::matmul_f_tile_avx512;
  if (level == CpuLevel::kAvx2) return detail::matmul_f_tile_avx2;
#else
  (void)level;
#endif
  return detail::matmul_f_tile_scalar;
}

}  // namespace

void MatmulScratch::Free::operator()(void* p) const { std::free(p); }

void* MatmulScratch::get(size_t bytes) {
  if (bytes > capacity_ || !data_) {
    const size_t rounded = (bytes + 63) / 64 * 64 + 64;
    data_.reset(std::aligned_alloc(64, rounded));
    capacity_ = rounded;
  }
  return data_.get();
}

void matmul(TensorType wtype, const void* w, int64_t num_rows, int64_t row_len, const float* x,
            int64_t num_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch) {
  assert(is_supported_weight_type(wtype) && "matmul: unsupported weight type");
  assert(row_len % traits_of(wtype).block_elems == 0 && "matmul: row_len not a multiple of the block");
  if (num_rows <= 0 || num_tokens <= 0) return;
  const auto* wbytes = static_cast<const uint8_t*>(w);
  const size_t w_stride = row_bytes(wtype, row_len);
  const CpuLevel level = cpu_level();
  const int64_t num_tiles = (num_rows + kTileRows - 1) / kTileRows;
  auto rows_of = [&](int64_t begin, int64_t end, int64_t* r0, int64_t* n) {
    *r0 = begin * kTileRows;
    *n = std::min(end * kTileRows, num_rows) - *r0;
  };

#if defined(__x86_64__) || defined(_M_X64)
  if (level != CpuLevel::kScalar && has_int8_kernel(wtype)) {
    const bool avx512 = level == CpuLevel::kAvx512;
    const detail::ActLayout layout = avx512 ? detail::act_layout_avx512(wtype) : detail::act_layout_avx2(wtype);
    const int64_t num_padded = detail::padded_blocks(row_len);
    const int64_t q_stride = num_padded * 32;
    const int64_t ds_stride = num_padded * 2;
    const size_t q_bytes = static_cast<size_t>(num_tokens * q_stride);
    auto* base = static_cast<uint8_t*>(scratch.get(q_bytes + static_cast<size_t>(num_tokens * ds_stride) * 4 + 64));
    int8_t* q = reinterpret_cast<int8_t*>(base);
    float* ds = reinterpret_cast<float*>(base + (q_bytes + 63) / 64 * 64);
    auto quantize = [&](int64_t t0, int64_t t1) {
      detail::quantize_acts_avx2(x, row_len, t0, t1, layout, q, q_stride, ds, ds_stride);
    };
    if (num_tokens * row_len >= 16384) {
      pool.parallel_for(num_tokens, quantize);
    } else {
      quantize(0, num_tokens);
    }
    const detail::QuantizedActs acts{q, ds, q_stride, ds_stride};
    pool.parallel_for(num_tiles, [&](int64_t begin, int64_t end) {
      int64_t r0 = 0;
      int64_t n = 0;
      rows_of(begin, end, &r0, &n);
      if (avx512) {
        detail::matmul_q_tile_avx512(wtype, wbytes + r0 * w_stride, w_stride, n, row_len, acts, num_tokens,
                                     y + r0, num_rows);
      } else {
        detail::matmul_q_tile_avx2(wtype, wbytes + r0 * w_stride, w_stride, n, row_len, acts, num_tokens,
                                   y + r0, num_rows);
      }
    });
    return;
  }
#endif

  const FloatTile ftile = float_tile(level);
  if (is_float_type(wtype)) {
    pool.parallel_for(num_tiles, [&](int64_t begin, int64_t end) {
      int64_t r0 = 0;
      int64_t n = 0;
      rows_of(begin, end, &r0, &n);
      ftile(wtype, wbytes + r0 * w_stride, w_stride, n, row_len, x, num_tokens, y + r0, num_rows);
    });
    return;
  }

  // Any other type: dequantise kDequantRows rows to f32, then the f32 kernel.
  pool.parallel_for(num_tiles, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> rows;
    rows.resize(static_cast<size_t>(kDequantRows * row_len));
    int64_t r0 = 0;
    int64_t n = 0;
    rows_of(begin, end, &r0, &n);
    for (int64_t r = r0; r < r0 + n; r += kDequantRows) {
      const int64_t m = std::min(kDequantRows, r0 + n - r);
      for (int64_t i = 0; i < m; ++i) {
        dequantize_row_fast(wtype, wbytes + (r + i) * w_stride, rows.data() + i * row_len, row_len);
      }
      ftile(TensorType::F32, reinterpret_cast<const uint8_t*>(rows.data()), static_cast<size_t>(row_len) * 4, m,
            row_len, x, num_tokens, y + r, num_rows);
    }
  });
}

}  // namespace kvscope
