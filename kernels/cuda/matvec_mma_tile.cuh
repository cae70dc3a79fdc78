// The pieces the tensor-core matvec kernels share (matvec_mma.cu: the plain
// and split layouts; matvec_mma_sweep.cu: the sweep): a block's shape,
// activations staged as f16 hi / lo pairs, a weight row's A fragments, the
// MMA, and the warps' partial sums with the order they are added in.
// matvec_mma.cu's top comment has the arithmetic and the fragment layouts.
// Internal to kernels/cuda.
#pragma once

#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/matvec_outputs.cuh"
#include "kernels/cuda/row_norm.cuh"
#include "kernels/tensor_type.h"

namespace kvscope::cuda::mma {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kRows = 16;               // weight rows of a block: an MMA's M
constexpr int kTileTokens = 8;          // an MMA's N
constexpr int kTiles = 4;
constexpr int kTokens = kTiles * kTileTokens;  // tokens of a block
constexpr int kStageBlocks = kWarps;    // quantisation blocks per stage: one per warp
constexpr int kBlockWords = kQBlockElems / 2;  // f16 pairs of one block
// Words of one staged token row: 8 blocks of 16 pairs, padded by 4 so that
// lane (g, c) reading word 16 i + 8 s + c (+ 4) of token row g hits bank
// (4 g + c + ...) mod 32: the 32 lanes, 32 banks.
constexpr int kRowWords = kStageBlocks * kBlockWords + 4;

// Shared memory: the stage, then (reusing it) the warps' partial sums.
union Shared {
  struct {
    uint32_t hi[kTokens][kRowWords];
    uint32_t lo[kTokens][kRowWords];
    float sum_x[kTokens][kStageBlocks];  // sum of the block's x, in element order
    float scale[kTokens][kStageBlocks];  // 2^e the block's x were divided by
  } stage;
  float partial[2][kWarps][kRows][kTokens];  // [gate / up or the one output][warp][row][token]
};

template <TensorType kType>
inline constexpr int kBlockBytes = kType == TensorType::Q8_0 ? kQ8_0BlockBytes : kQ4_1BlockBytes;

__device__ inline uint32_t half_pair(__half a, __half b) {
  return static_cast<uint32_t>(__half_as_ushort(a)) | (static_cast<uint32_t>(__half_as_ushort(b)) << 16);
}

// Where a block's staged activations live: hi / lo f16 pairs, a token's row
// every row_words words; its blocks' sums of x and 2^e scales, a token's row
// every row_blocks floats. The plain and split kernels stage 8 blocks at a
// time (Shared::stage); the sweep stages a whole row once (sweep_layout).
struct StageView {
  uint32_t* hi;
  uint32_t* lo;
  float* sum_x;
  float* scale;
  int row_words;
  int row_blocks;
};

// Stages quantisation block `block` of one token's row x_row (at slot i of
// the view's token row `t`): its hi / lo pairs, its sum of x (in element
// order) and the 2^e it was divided by. With a norm (norm_w), each x is first
// rms_normed with the token's scale: the bits an rms_norm launch would have
// written. Null x_row stages zeros (a token past the tile, a block past the
// stage).
__device__ inline void stage_block(const StageView& v, int t, int i, const float* x_row, int64_t block,
                                   const float* norm_w, float token_scale) {
  uint32_t* hi = v.hi + t * v.row_words + i * kBlockWords;
  uint32_t* lo = v.lo + t * v.row_words + i * kBlockWords;
  if (x_row == nullptr) {
#pragma unroll
    for (int w = 0; w < kBlockWords; ++w) hi[w] = lo[w] = 0u;
    v.sum_x[t * v.row_blocks + i] = 0.0f;
    v.scale[t * v.row_blocks + i] = 1.0f;
    return;
  }
  // 16-byte aligned (row_len a multiple of 32, x checked).
  const float4* src = reinterpret_cast<const float4*>(x_row + block * kQBlockElems);
  const float4* g = norm_w ? reinterpret_cast<const float4*>(norm_w + block * kQBlockElems) : nullptr;
  float xs[kQBlockElems];
#pragma unroll
  for (int q = 0; q < kQBlockElems / 4; ++q) {
    const float4 f = g ? rms_normed(__ldg(src + q), token_scale, __ldg(g + q)) : __ldg(src + q);
    xs[4 * q] = f.x;
    xs[4 * q + 1] = f.y;
    xs[4 * q + 2] = f.z;
    xs[4 * q + 3] = f.w;
  }
  float largest = 0.0f;
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kQBlockElems; ++j) {
    largest = fmaxf(largest, fabsf(xs[j]));
    sum = __fadd_rn(sum, xs[j]);
  }
  // |x'| < 2^14 keeps hi far from f16's largest finite value (65504), and
  // the largest at 2^13 or more keeps lo's last bit 2^-22 of it. e >= -126
  // keeps both 2^e and 2^-e normal floats (a block under 2^-113 is left
  // below 2^13); an all-zero block, or one holding an inf, is not scaled.
  const int e = largest > 0.0f && largest <= FLT_MAX ? max(ilogbf(largest) - 13, -126) : 0;
  const float down = ldexpf(1.0f, -e);
#pragma unroll
  for (int j = 0; j < kQBlockElems; j += 2) {
    const float a = __fmul_rn(xs[j], down);
    const float b = __fmul_rn(xs[j + 1], down);
    const __half ha = __float2half_rn(a);
    const __half hb = __float2half_rn(b);
    hi[j / 2] = half_pair(ha, hb);
    lo[j / 2] = half_pair(__float2half_rn(__fsub_rn(a, __half2float(ha))),
                          __float2half_rn(__fsub_rn(b, __half2float(hb))));
  }
  v.sum_x[t * v.row_blocks + i] = sum;
  v.scale[t * v.row_blocks + i] = ldexpf(1.0f, e);
}

__device__ inline StageView stage_view(Shared& sh) {
  return {&sh.stage.hi[0][0], &sh.stage.lo[0][0], &sh.stage.sum_x[0][0], &sh.stage.scale[0][0], kRowWords,
          kStageBlocks};
}

// Stages blocks [b0, b0 + nb) of tokens [t0, t0 + tile) (rows of tokens up to
// `tokens`, a multiple of kTileTokens, are written: the used MMA tiles; past
// the tile's end and the stage's end, zeros). One (token, block) per thread
// at a time. All threads call it between two barriers.
__device__ inline void stage_activations(Shared& sh, const float* x, int64_t row_len, int64_t t0, int tile,
                                         int tokens, int64_t b0, int nb, const float* norm_w,
                                         const float* token_scale) {
  const StageView v = stage_view(sh);
  for (int p = threadIdx.x; p < tokens * kStageBlocks; p += kThreads) {
    const int t = p / kStageBlocks;
    const int i = p % kStageBlocks;
    const bool real = t < tile && i < nb;
    stage_block(v, t, i, real ? x + (t0 + t) * row_len : nullptr, b0 + i, norm_w,
                real && norm_w ? token_scale[t] : 0.0f);
  }
}

// One weight row's part of an A fragment for one quantisation block: the
// pairs of columns (2c, 2c+1) and (2c+8, 2c+9) of each of the block's two
// 16-column k-steps, as f16 pairs, and the block's d and m.
struct RowBlock {
  uint32_t k0_lo, k0_hi, k1_lo, k1_hi;
  float d, m;
};

// f16 pairs of small integers through the exponent trick: 0x6400 is 1024 in
// f16, so 0x6400 | n is 1024 + n (n < 1024), and subtracting the bias is exact.
__device__ inline uint32_t unbias(uint32_t biased_pairs, float bias) {
  const __half2 r = __hsub2(*reinterpret_cast<const __half2*>(&biased_pairs), __float2half2_rn(bias));
  return *reinterpret_cast<const uint32_t*>(&r);
}

template <TensorType kType>
__device__ inline RowBlock load_row_block(const uint8_t* block, int c) {
  const auto* h = reinterpret_cast<const uint16_t*>(block);  // blocks are 2-byte aligned
  RowBlock r;
  r.d = f16_bits_to_f32(h[0]);
  if constexpr (kType == TensorType::Q4_1) {
    r.m = f16_bits_to_f32(h[1]);
    // Element j < 16 is byte j's low nibble, element 16 + j its high nibble.
    const uint32_t v = h[2 + c];      // bytes 2c, 2c + 1
    const uint32_t w = h[2 + c + 4];  // bytes 2c + 8, 2c + 9
    const auto pair = [](uint32_t first, uint32_t second) { return 0x64006400u | first | (second << 16); };
    r.k0_lo = unbias(pair(v & 15u, (v >> 8) & 15u), 1024.0f);
    r.k0_hi = unbias(pair(w & 15u, (w >> 8) & 15u), 1024.0f);
    r.k1_lo = unbias(pair((v >> 4) & 15u, (v >> 12) & 15u), 1024.0f);
    r.k1_hi = unbias(pair((w >> 4) & 15u, (w >> 12) & 15u), 1024.0f);
  } else {
    r.m = 0.0f;
    // Element j is byte j of the quants (after the 2-byte scale), an int8:
    // (j ^ 0x80) is j + 128 as an unsigned byte, so 0x6400 | that is 1152 + j.
    const auto pair = [](uint32_t two) { return 0x64006400u | ((two & 0xffu) ^ 0x80u) | (((two >> 8) ^ 0x80u) << 16); };
    r.k0_lo = unbias(pair(h[1 + c]), 1152.0f);       // bytes 2c, 2c + 1
    r.k0_hi = unbias(pair(h[1 + c + 4]), 1152.0f);   // bytes 2c + 8, 2c + 9
    r.k1_lo = unbias(pair(h[1 + c + 8]), 1152.0f);   // bytes 16 + 2c, ...
    r.k1_hi = unbias(pair(h[1 + c + 12]), 1152.0f);  // bytes 24 + 2c, ...
  }
  return r;
}

// d += A B for one 16 x 8 x 16 step.
__device__ inline void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                 uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// block_dot of the f32 kernel, from the block's MMA result: d * qx (+ m * sum x).
template <TensorType kType>
__device__ inline float block_dot(float d, float m, float qx, float sum_x) {
  return kType == TensorType::Q8_0 ? __fmul_rn(d, qx) : __fadd_rn(__fmul_rn(d, qx), __fmul_rn(m, sum_x));
}

// Block i of the stage for this thread's two rows (g and g + 8) and every
// used tile: acc[n][0..1] row g, tokens n * 8 + 2c and + 1; acc[n][2..3] row g + 8.
template <TensorType kType>
__device__ inline void stage_block_products(const StageView& v, int i, const RowBlock& ra, const RowBlock& rb,
                                            int tiles, float (&acc)[kTiles][4]) {
  const int lane = threadIdx.x % kWarpSize;
  const int g = lane / 4;
  const int c = lane % 4;
#pragma unroll
  for (int n = 0; n < kTiles; ++n) {
    if (n >= tiles) break;  // block-uniform
    const uint32_t* hi = v.hi + (n * kTileTokens + g) * v.row_words + i * kBlockWords;
    const uint32_t* lo = v.lo + (n * kTileTokens + g) * v.row_words + i * kBlockWords;
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_16816(d, ra.k0_lo, rb.k0_lo, ra.k0_hi, rb.k0_hi, hi[c], hi[c + 4]);
    mma_16816(d, ra.k1_lo, rb.k1_lo, ra.k1_hi, rb.k1_hi, hi[8 + c], hi[12 + c]);
    mma_16816(d, ra.k0_lo, rb.k0_lo, ra.k0_hi, rb.k0_hi, lo[c], lo[c + 4]);
    mma_16816(d, ra.k1_lo, rb.k1_lo, ra.k1_hi, rb.k1_hi, lo[8 + c], lo[12 + c]);
    const int ta = n * kTileTokens + 2 * c;
    const int tb = ta + 1;
    const float scale_a = v.scale[ta * v.row_blocks + i], scale_b = v.scale[tb * v.row_blocks + i];
    const float sum_a = v.sum_x[ta * v.row_blocks + i], sum_b = v.sum_x[tb * v.row_blocks + i];
    const float qa = __fmul_rn(d[0], scale_a), qb = __fmul_rn(d[1], scale_b);
    const float qc = __fmul_rn(d[2], scale_a), qd = __fmul_rn(d[3], scale_b);
    acc[n][0] = __fadd_rn(acc[n][0], block_dot<kType>(ra.d, ra.m, qa, sum_a));
    acc[n][1] = __fadd_rn(acc[n][1], block_dot<kType>(ra.d, ra.m, qb, sum_b));
    acc[n][2] = __fadd_rn(acc[n][2], block_dot<kType>(rb.d, rb.m, qc, sum_a));
    acc[n][3] = __fadd_rn(acc[n][3], block_dot<kType>(rb.d, rb.m, qd, sum_b));
  }
}

// A block's per-warp partial sums: [gate / up or the one output][warp][row][token].
using Partials = float (*)[kWarps][kRows][kTokens];

// The thread's partial sums into partial[which][warp][row][token].
__device__ inline void store_partials(Partials partial, int which, const float (&acc)[kTiles][4], int tiles) {
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int g = lane / 4;
  const int c = lane % 4;
#pragma unroll
  for (int n = 0; n < kTiles; ++n) {
    if (n >= tiles) break;
    const int t = n * kTileTokens + 2 * c;
    partial[which][warp][g][t] = acc[n][0];
    partial[which][warp][g][t + 1] = acc[n][1];
    partial[which][warp][g + 8][t] = acc[n][2];
    partial[which][warp][g + 8][t + 1] = acc[n][3];
  }
}

// An output's sum over the warps, in warp order. Split (rank 0 of a
// cluster): each warp's sum is first carried through the ranks' partial sums
// in rank (= stage) order, as the unsplit warp carried it through its stages.
template <bool kSplit>
__device__ inline float output_sum(Partials partial, int which, int row, int t) {
  if constexpr (!kSplit) {
    float s = partial[which][0][row][t];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) s = __fadd_rn(s, partial[which][w][row][t]);
    return s;
  } else {
#if __CUDA_ARCH__ >= 900
    const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const unsigned ranks = cluster.num_blocks();
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      float* mine = &partial[which][w][row][t];
      float warp_sum = *mine;
      for (unsigned r = 1; r < ranks; ++r) warp_sum = __fadd_rn(warp_sum, *cluster.map_shared_rank(mine, r));
      s = w == 0 ? warp_sum : __fadd_rn(s, warp_sum);
    }
    return s;
#else
    __trap();  // the launcher splits only on devices of compute capability 9.0 or later
    return 0.0f;
#endif
  }
}

// Rank 0 of the cluster has read every rank's partial sums (the split
// kernels' second cluster barrier): until then no rank may exit, its shared
// memory being read.
template <bool kSplit>
__device__ inline void cluster_barrier() {
#if __CUDA_ARCH__ >= 900
  if constexpr (kSplit) cooperative_groups::this_cluster().sync();
#endif
}

// Whether this block writes the outputs: every block unsplit, rank 0 split.
template <bool kSplit>
__device__ inline bool writes_outputs() {
#if __CUDA_ARCH__ >= 900
  if constexpr (kSplit) return cooperative_groups::this_cluster().block_rank() == 0;
#endif
  return true;
}

template <TensorType kType>
__device__ inline const uint8_t* weight_row(const void* w, int64_t r, int64_t row_len) {
  return static_cast<const uint8_t*>(w) + r * (row_len / kQBlockElems) * kBlockBytes<kType>;
}

// Where this thread is: its warp, its lane's MMA group g and index c, the
// block's tokens [t0, t0 + tile) in `tiles` MMA tiles, its first row, and
// the quantisation blocks it takes: [b_begin, b_end), every stage unsplit,
// stage r for rank r of a split cluster.
struct Place {
  int warp, g, c;
  int64_t t0;
  int tile, tiles;
  int64_t row0;
  int64_t b_begin, b_end;
};

template <bool kSplit>
__device__ inline Place place_of(int64_t num_tokens, int64_t row_len) {
  Place p;
  p.warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  p.g = lane / 4;
  p.c = lane % 4;
  p.t0 = static_cast<int64_t>(blockIdx.y) * kTokens;
  p.tile = static_cast<int>(min(static_cast<int64_t>(kTokens), num_tokens - p.t0));
  p.tiles = (p.tile + kTileTokens - 1) / kTileTokens;
  const int64_t num_blocks = row_len / kQBlockElems;
  int64_t group = blockIdx.x;
  p.b_begin = 0;
  p.b_end = num_blocks;
#if __CUDA_ARCH__ >= 900
  if constexpr (kSplit) {
    const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    group = blockIdx.x / cluster.num_blocks();
    p.b_begin = static_cast<int64_t>(cluster.block_rank()) * kStageBlocks;
    p.b_end = min(num_blocks, p.b_begin + kStageBlocks);
  }
#endif
  p.row0 = group * kRows;
  return p;
}

// Weight row `row` of a matvec_q_multi launch's outputs, one after the other
// (a row past the end reads output 0's row 0, which is then not stored).
template <TensorType kType>
__device__ inline const uint8_t* multi_weight_row(const MultiOutputs& outputs, int64_t row, int64_t row_len) {
  MatvecOutput o;
  int64_t local;
  const bool has = find_output(outputs, row, o, local);
  return weight_row<kType>(has ? o.w : outputs.out[0].w, has ? local : 0, row_len);
}

// Writes a 16-row group's outputs of a matvec_q_multi launch (rows row0 ..
// row0 + 15 of the outputs, tokens t0 .. t0 + tile - 1) from the warps'
// partial sums: y = the sum, or y + the sum with add_to_y. All threads of
// the block call it; split, only rank 0 does (writes_outputs).
template <bool kSplit>
__device__ inline void write_multi_outputs(const MultiOutputs& outputs, Partials partial, int64_t row0, int64_t t0,
                                           int tile, int tiles) {
  for (int p = threadIdx.x; p < kRows * tiles * kTileTokens; p += kThreads) {
    const int row = p / (tiles * kTileTokens);
    const int t = p % (tiles * kTileTokens);
    if (t >= tile) continue;
    MatvecOutput o;
    int64_t local;
    if (!find_output(outputs, row0 + row, o, local)) continue;
    float& y = o.y[(t0 + t) * o.ld + local];
    const float sum = output_sum<kSplit>(partial, 0, row, t);
    y = o.add_to_y ? __fadd_rn(y, sum) : sum;
  }
}

}  // namespace kvscope::cuda::mma
