// Dequantising matrix-vector kernel; see matvec_q.cuh.
//
// Layout of the work: a block of 8 warps covers 8 weight rows and a tile
// of up to kTokenTile = 8 tokens; warp w takes row blockIdx.x * 8 + w (of the
// outputs' rows one after the other for matvec_q_multi;
// of the gate and the up projection both for matvec_q_glu, which saves two
// launches). Lane l takes the row's quantisation blocks l, l + 32, ...: it
// dequantises its block's 32 quants into registers and multiplies them with
// the block's 32 activations of every token of the tile. A shuffle tree then
// sums the lanes, per token. So a weight byte is read once per 8 tokens
// instead of once per token, which is what a batch of decode rows or a
// prefill chunk needs.
//
// Both operands go through shared memory, 32 quantisation blocks (one per
// lane) of the row at a time, because a lane's own block is 20 or 34 bytes
// of weights and 128 bytes of activations per token: read straight from
// global memory, every load instruction of a warp touches 18 to 32 cache
// lines, and the L1 wavefronts, not the arithmetic, bounded the kernel
// (Nsight Compute on the H200: 46 us for SmolLM2's q/k/v at 64 tokens, about
// 10x its instruction count). Staged, the block loads the tile's activations
// with float4 loads that are contiguous across threads, once for all its
// rows; each warp copies its row's bytes with consecutive lanes reading
// consecutive words; lanes then read their own block from shared memory,
// where a padded stride (kXBlockStride) keeps the reads free of bank
// conflicts.
//
// Each block's scale (and Q4_1 min) is factored out of its 32 products:
//   Q8_0: d * sum_j q_j x_j;   Q4_1: d * sum_j q_j x_j + m * sum_j x_j.
// sum_j x_j depends on the token and the block only, so the block computes it
// once per (token, block) while staging, instead of once per row.
//
// Invariance: a token's result is computed by the same instructions in the
// same order whatever the other tokens of the tile or the launch (the tile
// only decides which tokens share a weight load), and every multiply-add is an explicit __fmaf_rn / __fadd_rn /
// __fmul_rn, so no compiler contraction choice can differ between tile
// slots. The order is: per lane, blocks b = lane, lane + 32, ... summed into
// one partial each; per block, the FMA chain over j = 0..31 and the sum of x
// in j order; then the xor tree over the lanes.
// tests/kernels/cuda/matvec_q_test.cpp checks a token's bits alone, in a tile
// and at every tile slot, and against a host replica of that order.
//
// Fusions (matvec_q.cuh): with an InputNorm, warp w first computes the norm
// scale of the tile's token w (row_norm.cuh, rms_norm's arithmetic) and the
// staging multiplies each activation by it and the norm's weight, so the
// staged values are the bits an rms_norm launch would have written; with
// add_to_y, the final write adds the sum to y instead (the residual add).
//
// Napkin math (H200, SmolLM2): a 576 x 1536 Q4_1 matrix is 553 KB, 0.13 us
// at 4.3 TB/s, so one token is launch-bound; at 512 tokens the multiply-adds
// (512 x 0.88 M) bound it instead: about 1.3 instructions per weight element
// per token (a float4 shared load per 4 FMAs).
#include "kernels/cuda/matvec_q.cuh"

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/activations.cuh"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/matvec_mma.cuh"
#include "kernels/cuda/matvec_outputs.cuh"
#include "kernels/cuda/overlapped_launch.cuh"
#include "kernels/cuda/row_norm.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = kWarpsPerBlock * kWarpSize;
constexpr int kTokenTile = 8;
// Quantisation blocks of a row staged at once: one per lane.
constexpr int kChunkBlocks = kWarpSize;
// A staged block of activations takes 36 floats, not 32: lane l's float4
// reads of its own block start at float 36 l, so the 8 lanes of each
// quarter-warp hit distinct bank groups (36 l mod 32 = 4 l).
constexpr int kXBlockStride = kQBlockElems + 4;
// 16-bit words of one staged weight chunk of a warp (Q8_0's 34-byte blocks, the larger).
constexpr int kWeightChunkHalves = kChunkBlocks * kQ8_0BlockBytes / 2;

template <TensorType kType>
inline constexpr int kBlockBytes = kType == TensorType::Q8_0 ? kQ8_0BlockBytes : kQ4_1BlockBytes;

// Shared memory of a block for a token tile of `tile`: the activations
// [tile][kChunkBlocks][kXBlockStride] floats, the per-(token, block) sums of x
// [tile][kChunkBlocks], then each warp's weight chunk.
__host__ __device__ inline size_t shared_bytes_for(int tile) {
  return (static_cast<size_t>(tile) * kChunkBlocks * (kXBlockStride + 1)) * sizeof(float) +
         static_cast<size_t>(kWarpsPerBlock) * kWeightChunkHalves * sizeof(uint16_t);
}

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

// The block's share of staging one chunk: blocks [b0, b0 + nb) of the tile's
// tokens [t0, t0 + tile) into x_s, and (Q4_1) their sums of x into sx_s, in
// j order as the kernel has always added them. With a norm, each element is
// staged normalised: rms_normed(x, token_scale[t], norm_w), the bits an
// rms_norm launch would have written. All threads call it between two barriers.
template <TensorType kType>
__device__ inline void stage_activations(const float* x, int64_t row_len, int64_t t0, int tile, int64_t b0, int nb,
                                         const float* norm_w, const float* token_scale, float* x_s, float* sx_s) {
  constexpr int kVecsPerBlock = kQBlockElems / 4;
  const int vecs = nb * kVecsPerBlock;
  for (int t = 0; t < tile; ++t) {
    // x[t0 + t][(b0 + b) * 32 + 4 v ..]: 16-byte aligned (row_len is a multiple
    // of 32 and the launchers check x's alignment).
    const float4* src = reinterpret_cast<const float4*>(x + (t0 + t) * row_len + b0 * kQBlockElems);
    const float4* g = norm_w ? reinterpret_cast<const float4*>(norm_w + b0 * kQBlockElems) : nullptr;
    for (int e = threadIdx.x; e < vecs; e += kThreads) {
      const int b = e / kVecsPerBlock;
      const int v = e % kVecsPerBlock;
      const float4 in = __ldg(src + e);
      *reinterpret_cast<float4*>(x_s + (t * kChunkBlocks + b) * kXBlockStride + 4 * v) =
          g ? rms_normed(in, token_scale[t], __ldg(g + e)) : in;
    }
  }
  if constexpr (kType == TensorType::Q4_1) {
    __syncthreads();
    for (int i = threadIdx.x; i < tile * kChunkBlocks; i += kThreads) {
      const int t = i / kChunkBlocks;
      const int b = i % kChunkBlocks;
      if (b >= nb) continue;
      const float* xb = x_s + (t * kChunkBlocks + b) * kXBlockStride;
      float sx = 0.0f;
#pragma unroll
      for (int j = 0; j < kQBlockElems; ++j) sx = __fadd_rn(sx, xb[j]);
      sx_s[i] = sx;
    }
  }
}

// A warp copies blocks [b0, b0 + nb) of one weight row into its chunk of
// shared memory, consecutive lanes reading consecutive 32-bit words (16-bit
// where the row is only 2-byte aligned). The caller __syncwarp()s after.
template <TensorType kType>
__device__ inline void stage_weights(const uint8_t* w_row, int64_t b0, int nb, uint16_t* w_s) {
  constexpr int block_bytes = kBlockBytes<kType>;
  const int lane = threadIdx.x % kWarpSize;
  const uint8_t* src = w_row + b0 * block_bytes;
  const int halves = nb * block_bytes / 2;
  if (reinterpret_cast<uintptr_t>(src) % 4 == 0) {
    const auto* src32 = reinterpret_cast<const uint32_t*>(src);
    auto* dst32 = reinterpret_cast<uint32_t*>(w_s);  // w_s is 4-byte aligned (shared_bytes_for's layout)
    for (int i = lane; i < halves / 2; i += kWarpSize) dst32[i] = __ldg(src32 + i);
    if (halves % 2 != 0 && lane == 0) w_s[halves - 1] = __ldg(reinterpret_cast<const uint16_t*>(src) + halves - 1);
  } else {
    const auto* src16 = reinterpret_cast<const uint16_t*>(src);
    for (int i = lane; i < halves; i += kWarpSize) w_s[i] = __ldg(src16 + i);
  }
}

// One staged chunk of one row times the tile's tokens, added into acc[t]
// (lane's block only; lanes past nb add nothing).
template <TensorType kType, int kTile>
__device__ inline void chunk_dots(const uint16_t* w_s, const float* x_s, const float* sx_s, int nb, int tile,
                                  float (&acc)[kTile]) {
  const int lane = threadIdx.x % kWarpSize;
  if (lane >= nb) return;
  float q[kQBlockElems];
  float d, m;
  load_block<kType>(reinterpret_cast<const uint8_t*>(w_s) + lane * kBlockBytes<kType>, q, d, m);
  // A predicate, not a break, for the tile's end: the tokens' chains then
  // interleave instead of running one after another.
#pragma unroll
  for (int t = 0; t < kTile; ++t) {
    if (t >= tile) continue;
    const float4* xb = reinterpret_cast<const float4*>(x_s + (t * kChunkBlocks + lane) * kXBlockStride);
    float qx = 0.0f;
#pragma unroll
    for (int i = 0; i < kQBlockElems / 4; ++i) {
      const float4 v = xb[i];
      qx = __fmaf_rn(q[4 * i], v.x, qx);
      qx = __fmaf_rn(q[4 * i + 1], v.y, qx);
      qx = __fmaf_rn(q[4 * i + 2], v.z, qx);
      qx = __fmaf_rn(q[4 * i + 3], v.w, qx);
    }
    const float block_dot = kType == TensorType::Q8_0
                                ? __fmul_rn(d, qx)
                                : __fadd_rn(__fmul_rn(d, qx), __fmul_rn(m, sx_s[t * kChunkBlocks + lane]));
    acc[t] = __fadd_rn(acc[t], block_dot);
  }
}

template <TensorType kType>
__device__ inline const uint8_t* weight_row(const void* w, int64_t r, int64_t row_len) {
  constexpr int block_bytes = kType == TensorType::Q8_0 ? kQ8_0BlockBytes : kQ4_1BlockBytes;
  return static_cast<const uint8_t*>(w) + r * (row_len / kQBlockElems) * block_bytes;  // w[r]
}

// The block's shared memory as shared_bytes_for lays it out: the staged
// activations, their per-(token, block) sums, and this warp's weight chunk.
struct Staging {
  float* x_s;
  float* sx_s;
  uint16_t* w_s;
};

__device__ inline Staging carve_staging(unsigned char* smem, int tile, int warp) {
  Staging st;
  st.x_s = reinterpret_cast<float*>(smem);
  st.sx_s = st.x_s + tile * kChunkBlocks * kXBlockStride;
  st.w_s = reinterpret_cast<uint16_t*>(st.sx_s + tile * kChunkBlocks) + warp * kWeightChunkHalves;
  return st;
}

// The block's token tile: tokens [t0, t0 + tile) of grid.y's tile of kTile.
template <int kTile>
__device__ inline int token_tile(int64_t num_tokens, int64_t& t0) {
  t0 = static_cast<int64_t>(blockIdx.y) * kTile;
  return static_cast<int>(min(static_cast<int64_t>(kTile), num_tokens - t0));
}

// grid.x covers the outputs' rows one after the other (warp w of block b:
// row b * 8 + w of the concatenation), grid.y the token tiles of kTile (1
// for a single token: fewer registers, so more blocks in flight; else
// kTokenTile). Dynamic shared memory: shared_bytes_for(min(num_tokens, kTile)).
template <TensorType kType, int kTile>
__global__ void __launch_bounds__(kThreads)
    matvec_multi_kernel(MultiOutputs outputs, int64_t row_len, const float* x, int64_t num_tokens, InputNorm norm) {
  wait_for_previous_kernel();  // a long kernel: the next one starts as it exits
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float token_scale[kTile];
  const int warp = threadIdx.x / kWarpSize;
  int64_t t0;
  const int tile = token_tile<kTile>(num_tokens, t0);
  const auto [x_s, sx_s, w_s] = carve_staging(smem, tile, warp);
  // With a norm, the tile's token scales first (the chunk loop's first barrier publishes them).
  if (norm.weight) block_rms_scales(x, row_len, t0, tile, norm.eps, token_scale);

  MatvecOutput o;
  int64_t r;
  // Warp-uniform; a warp past the last row still joins every barrier.
  const bool active = find_output(outputs, static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp, o, r);
  float acc[kTile];
#pragma unroll
  for (int t = 0; t < kTile; ++t) acc[t] = 0.0f;
  const int64_t num_blocks = row_len / kQBlockElems;
  for (int64_t b0 = 0; b0 < num_blocks; b0 += kChunkBlocks) {
    const int nb = static_cast<int>(min(static_cast<int64_t>(kChunkBlocks), num_blocks - b0));
    __syncthreads();  // every warp is done with the previous chunk's activations
    // The warp's weights first: their loads are then in flight together with
    // the activations' (w_s is the warp's own; the last __syncwarp below
    // ordered its previous reads).
    if (active) stage_weights<kType>(weight_row<kType>(o.w, r, row_len), b0, nb, w_s);
    stage_activations<kType>(x, row_len, t0, tile, b0, nb, norm.weight, token_scale, x_s, sx_s);
    __syncthreads();  // also a warp barrier for w_s
    if (!active) continue;
    chunk_dots<kType, kTile>(w_s, x_s, sx_s, nb, tile, acc);
    __syncwarp();  // every lane has its block in registers before the next chunk overwrites w_s
  }
  if (!active) return;
#pragma unroll
  for (int t = 0; t < kTile; ++t) {
    if (t >= tile) break;
    const float sum = warp_sum(acc[t]);
    if (threadIdx.x % kWarpSize == 0) {
      float& y = o.y[(t0 + t) * o.ld + r];
      y = o.add_to_y ? __fadd_rn(y, sum) : sum;
    }
  }
}

// Row r of the gate and of the up projection, then act(gate) * up. Shared
// memory as matvec_multi_kernel's; the gate's and the up row's chunks take
// turns in the warp's weight chunk.
template <TensorType kType, int kTile, typename Act>
__global__ void __launch_bounds__(kThreads)
    matvec_glu_kernel(const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len, const float* x,
                      int64_t num_tokens, float* out, int64_t ld, InputNorm norm) {
  wait_for_previous_kernel();  // a long kernel: the next one starts as it exits
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float token_scale[kTile];
  const int warp = threadIdx.x / kWarpSize;
  int64_t t0;
  const int tile = token_tile<kTile>(num_tokens, t0);
  const auto [x_s, sx_s, w_s] = carve_staging(smem, tile, warp);
  // With a norm, the tile's token scales first (the chunk loop's first barrier publishes them).
  if (norm.weight) block_rms_scales(x, row_len, t0, tile, norm.eps, token_scale);

  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  const bool active = r < num_rows;  // warp-uniform; inactive warps still join every barrier
  float gate[kTile], up[kTile];
#pragma unroll
  for (int t = 0; t < kTile; ++t) gate[t] = up[t] = 0.0f;
  const int64_t num_blocks = row_len / kQBlockElems;
  for (int64_t b0 = 0; b0 < num_blocks; b0 += kChunkBlocks) {
    const int nb = static_cast<int>(min(static_cast<int64_t>(kChunkBlocks), num_blocks - b0));
    __syncthreads();
    if (active) stage_weights<kType>(weight_row<kType>(w_gate, r, row_len), b0, nb, w_s);  // in flight with x's
    stage_activations<kType>(x, row_len, t0, tile, b0, nb, norm.weight, token_scale, x_s, sx_s);
    __syncthreads();
    if (!active) continue;
    chunk_dots<kType, kTile>(w_s, x_s, sx_s, nb, tile, gate);
    __syncwarp();
    stage_weights<kType>(weight_row<kType>(w_up, r, row_len), b0, nb, w_s);
    __syncwarp();
    chunk_dots<kType, kTile>(w_s, x_s, sx_s, nb, tile, up);
    __syncwarp();
  }
  if (!active) return;
  const Act act;
#pragma unroll
  for (int t = 0; t < kTile; ++t) {
    if (t >= tile) break;
    const float g = warp_sum(gate[t]);
    const float u = warp_sum(up[t]);
    if (threadIdx.x % kWarpSize == 0) out[(t0 + t) * ld + r] = __fmul_rn(act(g), u);
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

cudaError_t check_norm(const char* op, const InputNorm& norm) {
  KVSCOPE_CUDA_REQUIRE(op, reinterpret_cast<uintptr_t>(norm.weight) % 16 == 0);  // float4 loads beside x's
  KVSCOPE_CUDA_REQUIRE(op, norm.eps >= 0.0f);
  return cudaSuccess;
}

}  // namespace

cudaError_t matvec_q(TensorType type, const void* w, int64_t num_rows, int64_t row_len, const float* x,
                     int64_t num_tokens, float* y, cudaStream_t stream, MatvecMath math, TensorCoreSplit split,
                     InputNorm norm) {
  const MatvecOutput out{w, num_rows, y, num_rows};
  return matvec_q_multi(type, &out, 1, row_len, x, num_tokens, stream, math, split, norm);
}

cudaError_t matvec_q_multi(TensorType type, const MatvecOutput* outputs, int num_outputs, int64_t row_len,
                           const float* x, int64_t num_tokens, cudaStream_t stream, MatvecMath math,
                           TensorCoreSplit split, InputNorm norm) {
  const char* op = "matvec_q";
  if (cudaError_t e = check_common(op, type, row_len, num_tokens, x); e != cudaSuccess) return e;
  if (cudaError_t e = check_norm(op, norm); e != cudaSuccess) return e;
  MultiOutputs all;
  int64_t total_rows = 0;
  if (cudaError_t e = gather_outputs(op, outputs, num_outputs, num_tokens, &all, &total_rows); e != cudaSuccess) {
    return e;
  }
  KVSCOPE_CUDA_REQUIRE(op, total_rows / kWarpsPerBlock < 0x7fffffff);  // grid.x limit
  if (num_tokens == 0) return cudaSuccess;
  if (math == MatvecMath::kTensorCores) {
    return matvec_mma_multi(type, all, total_rows, row_len, x, num_tokens, stream, split, norm);
  }
  const size_t smem = shared_bytes_for(static_cast<int>(std::min<int64_t>(num_tokens, kTokenTile)));
  const unsigned int row_blocks = num_blocks_for(total_rows, kWarpsPerBlock);
  if (num_tokens == 1) {
    const dim3 grid(row_blocks, 1);
    if (type == TensorType::Q8_0) {
      launch_kernel(matvec_multi_kernel<TensorType::Q8_0, 1>, grid, kThreads, smem, stream, all, row_len, x,
                    num_tokens, norm);
    } else {
      launch_kernel(matvec_multi_kernel<TensorType::Q4_1, 1>, grid, kThreads, smem, stream, all, row_len, x,
                    num_tokens, norm);
    }
  } else {
    const dim3 grid(row_blocks, num_blocks_for(num_tokens, kTokenTile));
    if (type == TensorType::Q8_0) {
      launch_kernel(matvec_multi_kernel<TensorType::Q8_0, kTokenTile>, grid, kThreads, smem, stream, all, row_len, x,
                    num_tokens, norm);
    } else {
      launch_kernel(matvec_multi_kernel<TensorType::Q4_1, kTokenTile>, grid, kThreads, smem, stream, all, row_len, x,
                    num_tokens, norm);
    }
  }
  return cudaGetLastError();
}

cudaError_t matvec_q_glu(TensorType type, const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len,
                         const float* x, int64_t num_tokens, GluActivation activation, float* out, int64_t ld,
                         cudaStream_t stream, MatvecMath math, TensorCoreSplit split, InputNorm norm) {
  const char* op = "matvec_q_glu";
  if (cudaError_t e = check_common(op, type, row_len, num_tokens, x); e != cudaSuccess) return e;
  if (cudaError_t e = check_norm(op, norm); e != cudaSuccess) return e;
  KVSCOPE_CUDA_REQUIRE(op, num_rows > 0 && ld >= num_rows);
  KVSCOPE_CUDA_REQUIRE(op, num_rows / kWarpsPerBlock < 0x7fffffff);
  KVSCOPE_CUDA_REQUIRE(op, activation == GluActivation::Silu || activation == GluActivation::GeluTanh);
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, w_gate != nullptr && w_up != nullptr && out != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, reinterpret_cast<uintptr_t>(w_gate) % 2 == 0 && reinterpret_cast<uintptr_t>(w_up) % 2 == 0);
  if (math == MatvecMath::kTensorCores) {
    return matvec_mma_glu(type, w_gate, w_up, num_rows, row_len, x, num_tokens, activation, out, ld, stream, split,
                          norm);
  }
  const size_t smem = shared_bytes_for(static_cast<int>(std::min<int64_t>(num_tokens, kTokenTile)));
  const bool silu = activation == GluActivation::Silu;
  const auto launch = [&](auto kernel, int tile_tokens) {
    const dim3 grid(num_blocks_for(num_rows, kWarpsPerBlock), num_blocks_for(num_tokens, tile_tokens));
    launch_kernel(kernel, grid, kThreads, smem, stream, w_gate, w_up, num_rows, row_len, x, num_tokens, out, ld,
                  norm);
  };
  constexpr TensorType kQ8 = TensorType::Q8_0, kQ4 = TensorType::Q4_1;
  if (num_tokens == 1) {
    if (type == kQ8) {
      silu ? launch(matvec_glu_kernel<kQ8, 1, Silu>, 1) : launch(matvec_glu_kernel<kQ8, 1, GeluTanh>, 1);
    } else {
      silu ? launch(matvec_glu_kernel<kQ4, 1, Silu>, 1) : launch(matvec_glu_kernel<kQ4, 1, GeluTanh>, 1);
    }
  } else {
    if (type == kQ8) {
      silu ? launch(matvec_glu_kernel<kQ8, kTokenTile, Silu>, kTokenTile)
           : launch(matvec_glu_kernel<kQ8, kTokenTile, GeluTanh>, kTokenTile);
    } else {
      silu ? launch(matvec_glu_kernel<kQ4, kTokenTile, Silu>, kTokenTile)
           : launch(matvec_glu_kernel<kQ4, kTokenTile, GeluTanh>, kTokenTile);
    }
  }
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
