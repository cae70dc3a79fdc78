// Dequantising matrix-vector kernel; see matvec_q.cuh.
//
// Layout of the work: a block of 8 warps covers 8 weight rows and a tile of
// up to kTokenTile = 8 tokens; warp w takes row blockIdx.x * 8 + w (of the
// outputs' rows one after the other for matvec_q_multi; of the gate and the
// up projection both for matvec_q_glu, which saves two launches). Lane l
// takes the row's quantisation blocks l, l + 32, ...: it loads each weight
// block once, dequantises its 32 quants into registers, and multiplies them
// with the block's 32 activations of every token of the tile (float4 loads).
// A shuffle tree then sums the lanes, per token. So a weight byte is read
// once per 8 tokens instead of once per token, which is what a batch of
// decode rows or a prefill chunk needs; at one token the kernel is the old
// one-warp-per-row matvec.
//
// Each block's scale (and Q4_1 min) is factored out of its 32 products:
//   Q8_0: d * sum_j q_j x_j;   Q4_1: d * sum_j q_j x_j + m * sum_j x_j.
//
// Invariance: a token's result is computed by the same instructions in the
// same order whatever the other tokens of the tile or the launch (the tile
// only decides which tokens share a weight load), and every multiply-add is
// an explicit __fmaf_rn / __fadd_rn / __fmul_rn, so no compiler contraction
// choice can differ between tile slots. tests/kernels/cuda/matvec_q_test.cpp
// checks a token's bits alone, in a tile and at every tile slot.
//
// Napkin math (H200, SmolLM2): a 576 x 1536 Q4_1 matrix is 553 KB, 0.13 us
// at 4.3 TB/s, so one token is launch-bound; at 512 tokens the multiply-adds
// (512 x 0.88 M) bound it instead: about 3 instructions per weight element
// per token, 45 us at the H200's issue rate (docs/cuda.md, "Performance").
#include "kernels/cuda/matvec_q.cuh"

#include <cstdint>

#include "kernels/cuda/activations.cuh"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"

namespace kvscope::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = kWarpsPerBlock * kWarpSize;
constexpr int kTokenTile = 8;

// A quant as a float without an int-to-float conversion: 2^23 + n has the
// bits 0x4B000000 | n for 0 <= n < 2^23, and subtracting 2^23 is exact.
__device__ inline float small_uint_to_float(uint32_t n) { return __fsub_rn(__uint_as_float(0x4B000000u | n), 8388608.0f); }

// The 32 weights of block b of a row (as quants; the scale is applied after
// the dot product) and its scale d and min m (0 for Q8_0). Loads are 16-bit:
// block starts are only 2-byte aligned.
template <TensorType kType>
__device__ inline void load_block(const uint8_t* block, float (&q)[kQBlockElems], float& d, float& m) {
  const auto* h = reinterpret_cast<const uint16_t*>(block);
  d = f16_bits_to_f32(h[0]);
  if constexpr (kType == TensorType::Q8_0) {
    m = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint32_t two = h[1 + i];  // bytes 2 + 2i (low) and 3 + 2i (high), each an int8
      // int8 v as (v ^ 0x80) - 128, the xor making it an unsigned byte: 2^23 + 128 subtracted at once.
      q[2 * i] = __fsub_rn(__uint_as_float(0x4B000000u | ((two & 0xffu) ^ 0x80u)), 8388736.0f);
      q[2 * i + 1] = __fsub_rn(__uint_as_float(0x4B000000u | ((two >> 8) ^ 0x80u)), 8388736.0f);
    }
  } else {
    m = f16_bits_to_f32(h[1]);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t two = h[2 + i];  // quant bytes 2i and 2i + 1
      q[2 * i] = small_uint_to_float(two & 15u);               // element 2i: low nibble of byte 2i
      q[2 * i + 16] = small_uint_to_float((two >> 4) & 15u);   // element 2i + 16: its high nibble
      q[2 * i + 1] = small_uint_to_float((two >> 8) & 15u);    // element 2i + 1: low nibble of byte 2i + 1
      q[2 * i + 17] = small_uint_to_float((two >> 12) & 15u);  // element 2i + 17
    }
  }
}

// The dot products of one weight row with the tile's tokens [t0, t0 + tile),
// summed over the warp: every lane returns with acc[t] for t < tile. The
// one body every launcher below runs, so their bits agree.
template <TensorType kType>
__device__ inline void row_tile_dots(const uint8_t* w_row, int64_t row_len, const float* x, int64_t t0, int tile,
                                     float (&acc)[kTokenTile]) {
  constexpr int block_bytes = kType == TensorType::Q8_0 ? kQ8_0BlockBytes : kQ4_1BlockBytes;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t num_blocks = row_len / kQBlockElems;
#pragma unroll
  for (int t = 0; t < kTokenTile; ++t) acc[t] = 0.0f;
  for (int64_t b = lane; b < num_blocks; b += kWarpSize) {
    float q[kQBlockElems];
    float d, m;
    load_block<kType>(w_row + b * block_bytes, q, d, m);
#pragma unroll
    for (int t = 0; t < kTokenTile; ++t) {
      if (t >= tile) break;
      // x[t0 + t][b * 32 + j]: 128-byte aligned (row_len is a multiple of 32
      // and the launchers check x's alignment).
      const float4* xb = reinterpret_cast<const float4*>(x + (t0 + t) * row_len + b * kQBlockElems);
      float qx = 0.0f;
      float sx = 0.0f;
#pragma unroll
      for (int i = 0; i < kQBlockElems / 4; ++i) {
        const float4 v = __ldg(xb + i);
        qx = __fmaf_rn(q[4 * i], v.x, qx);
        qx = __fmaf_rn(q[4 * i + 1], v.y, qx);
        qx = __fmaf_rn(q[4 * i + 2], v.z, qx);
        qx = __fmaf_rn(q[4 * i + 3], v.w, qx);
        if constexpr (kType == TensorType::Q4_1) {
          sx = __fadd_rn(sx, v.x);
          sx = __fadd_rn(sx, v.y);
          sx = __fadd_rn(sx, v.z);
          sx = __fadd_rn(sx, v.w);
        }
      }
      const float block_dot = kType == TensorType::Q8_0 ? __fmul_rn(d, qx)
                                                        : __fadd_rn(__fmul_rn(d, qx), __fmul_rn(m, sx));
      acc[t] = __fadd_rn(acc[t], block_dot);
    }
  }
#pragma unroll
  for (int t = 0; t < kTokenTile; ++t) {
    if (t >= tile) break;
    acc[t] = warp_sum(acc[t]);
  }
}

template <TensorType kType>
__device__ inline const uint8_t* weight_row(const void* w, int64_t r, int64_t row_len) {
  constexpr int block_bytes = kType == TensorType::Q8_0 ? kQ8_0BlockBytes : kQ4_1BlockBytes;
  return static_cast<const uint8_t*>(w) + r * (row_len / kQBlockElems) * block_bytes;  // w[r]
}

// The outputs of one matvec_q_multi launch, by value (kernel parameter space).
struct MultiOutputs {
  MatvecOutput out[kMaxMatvecOutputs];
  int count;
};

// grid.x covers the outputs' rows one after the other (warp w of block b:
// row b * 8 + w of the concatenation), grid.y the token tiles.
template <TensorType kType>
__global__ void __launch_bounds__(kThreads)
    matvec_multi_kernel(MultiOutputs outputs, int64_t row_len, const float* x, int64_t num_tokens) {
  // Which output row r falls in, by a loop the compiler unrolls: indexing
  // the parameter array with a variable would copy it to local memory.
  int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  MatvecOutput o;
  bool found = false;
#pragma unroll
  for (int j = 0; j < kMaxMatvecOutputs; ++j) {
    if (!found && j < outputs.count) {
      if (r < outputs.out[j].num_rows) {
        o = outputs.out[j];
        found = true;
      } else {
        r -= outputs.out[j].num_rows;
      }
    }
  }
  if (!found) return;  // past the last row; r and o are warp-uniform
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokenTile;
  const int tile = static_cast<int>(min(static_cast<int64_t>(kTokenTile), num_tokens - t0));
  float acc[kTokenTile];
  row_tile_dots<kType>(weight_row<kType>(o.w, r, row_len), row_len, x, t0, tile, acc);
  if (threadIdx.x % kWarpSize != 0) return;
#pragma unroll
  for (int t = 0; t < kTokenTile; ++t) {
    if (t >= tile) break;
    o.y[(t0 + t) * o.ld + r] = acc[t];
  }
}

// Row r of the gate and of the up projection, then act(gate) * up.
template <TensorType kType, typename Act>
__global__ void __launch_bounds__(kThreads)
    matvec_glu_kernel(const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len, const float* x,
                      int64_t num_tokens, float* out, int64_t ld) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (r >= num_rows) return;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokenTile;
  const int tile = static_cast<int>(min(static_cast<int64_t>(kTokenTile), num_tokens - t0));
  float gate[kTokenTile], up[kTokenTile];
  row_tile_dots<kType>(weight_row<kType>(w_gate, r, row_len), row_len, x, t0, tile, gate);
  row_tile_dots<kType>(weight_row<kType>(w_up, r, row_len), row_len, x, t0, tile, up);
  if (threadIdx.x % kWarpSize != 0) return;
  const Act act;
#pragma unroll
  for (int t = 0; t < kTokenTile; ++t) {
    if (t >= tile) break;
    out[(t0 + t) * ld + r] = __fmul_rn(act(gate[t]), up[t]);
  }
}

// The preconditions every launcher shares; cudaSuccess when they hold.
cudaError_t check_common(const char* op, TensorType type, int64_t row_len, int64_t num_tokens, const float* x) {
  KVSCOPE_CUDA_REQUIRE(op, type == TensorType::Q4_1 || type == TensorType::Q8_0);
  KVSCOPE_CUDA_REQUIRE(op, row_len > 0 && row_len % kQBlockElems == 0);
  KVSCOPE_CUDA_REQUIRE(op, num_tokens >= 0 && num_tokens <= kMaxMatvecTokens);  // grid.y limit
  KVSCOPE_CUDA_REQUIRE(op, num_tokens == 0 || x != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, reinterpret_cast<uintptr_t>(x) % 16 == 0);  // float4 activation loads
  return cudaSuccess;
}

}  // namespace

cudaError_t matvec_q(TensorType type, const void* w, int64_t num_rows, int64_t row_len, const float* x,
                     int64_t num_tokens, float* y, cudaStream_t stream) {
  const MatvecOutput out{w, num_rows, y, num_rows};
  return matvec_q_multi(type, &out, 1, row_len, x, num_tokens, stream);
}

cudaError_t matvec_q_multi(TensorType type, const MatvecOutput* outputs, int num_outputs, int64_t row_len,
                           const float* x, int64_t num_tokens, cudaStream_t stream) {
  const char* op = "matvec_q";
  if (cudaError_t e = check_common(op, type, row_len, num_tokens, x); e != cudaSuccess) return e;
  KVSCOPE_CUDA_REQUIRE(op, outputs != nullptr && num_outputs >= 1 && num_outputs <= kMaxMatvecOutputs);
  MultiOutputs all{};
  all.count = num_outputs;
  int64_t total_rows = 0;
  for (int j = 0; j < num_outputs; ++j) {
    const MatvecOutput& o = outputs[j];
    KVSCOPE_CUDA_REQUIRE(op, o.num_rows > 0 && o.ld >= o.num_rows);
    KVSCOPE_CUDA_REQUIRE(op, num_tokens == 0 || (o.w != nullptr && o.y != nullptr));
    KVSCOPE_CUDA_REQUIRE(op, reinterpret_cast<uintptr_t>(o.w) % 2 == 0);  // 16-bit weight loads
    all.out[j] = o;
    total_rows += o.num_rows;
  }
  KVSCOPE_CUDA_REQUIRE(op, total_rows / kWarpsPerBlock < 0x7fffffff);  // grid.x limit
  if (num_tokens == 0) return cudaSuccess;
  const dim3 grid(num_blocks_for(total_rows, kWarpsPerBlock), num_blocks_for(num_tokens, kTokenTile));
  if (type == TensorType::Q8_0) {
    matvec_multi_kernel<TensorType::Q8_0><<<grid, kThreads, 0, stream>>>(all, row_len, x, num_tokens);
  } else {
    matvec_multi_kernel<TensorType::Q4_1><<<grid, kThreads, 0, stream>>>(all, row_len, x, num_tokens);
  }
  return cudaGetLastError();
}

cudaError_t matvec_q_glu(TensorType type, const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len,
                         const float* x, int64_t num_tokens, GluActivation activation, float* out, int64_t ld,
                         cudaStream_t stream) {
  const char* op = "matvec_q_glu";
  if (cudaError_t e = check_common(op, type, row_len, num_tokens, x); e != cudaSuccess) return e;
  KVSCOPE_CUDA_REQUIRE(op, num_rows > 0 && ld >= num_rows);
  KVSCOPE_CUDA_REQUIRE(op, num_rows / kWarpsPerBlock < 0x7fffffff);
  KVSCOPE_CUDA_REQUIRE(op, activation == GluActivation::Silu || activation == GluActivation::GeluTanh);
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, w_gate != nullptr && w_up != nullptr && out != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, reinterpret_cast<uintptr_t>(w_gate) % 2 == 0 && reinterpret_cast<uintptr_t>(w_up) % 2 == 0);
  const dim3 grid(num_blocks_for(num_rows, kWarpsPerBlock), num_blocks_for(num_tokens, kTokenTile));
  const bool silu = activation == GluActivation::Silu;
  if (type == TensorType::Q8_0) {
    if (silu) {
      matvec_glu_kernel<TensorType::Q8_0, Silu>
          <<<grid, kThreads, 0, stream>>>(w_gate, w_up, num_rows, row_len, x, num_tokens, out, ld);
    } else {
      matvec_glu_kernel<TensorType::Q8_0, GeluTanh>
          <<<grid, kThreads, 0, stream>>>(w_gate, w_up, num_rows, row_len, x, num_tokens, out, ld);
    }
  } else {
    if (silu) {
      matvec_glu_kernel<TensorType::Q4_1, Silu>
          <<<grid, kThreads, 0, stream>>>(w_gate, w_up, num_rows, row_len, x, num_tokens, out, ld);
    } else {
      matvec_glu_kernel<TensorType::Q4_1, GeluTanh>
          <<<grid, kThreads, 0, stream>>>(w_gate, w_up, num_rows, row_len, x, num_tokens, out, ld);
    }
  }
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
