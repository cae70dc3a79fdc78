// Tensor-core matvec_q (MatvecMath::kTensorCores; matvec_q.cuh has the
// contract); its tests are matvec_q_test.cpp's, run for both MatvecMath
// values. First run on an H100 on 2026-11-26: every test passed, and end to
// end 2.1x the f32 kernels' throughput at 64 sequences (docs/cuda.md).
//
// Why: the f32 kernel (matvec_q.cu) spends a multiply-add instruction per
// weight and token; on the H200 it reached 2.6 TFLOP/s at 64 tokens, latency
// bound at 37% occupancy, and the matmuls were 83% of a 64-sequence decode
// step. An m16n8k16 MMA does 4,096 multiply-adds per warp instruction.
//
// The operands, exactly:
//   - weights: a quant (0..15 for Q4_1, -128..127 for Q8_0) is exact in f16;
//     each 32-element block's scale d (and Q4_1 min m) stays f32, applied to
//     the block's MMA result as the f32 kernel applies it: d * sum q x
//     (+ m * sum x);
//   - activations: x' = x / 2^e, with 2^e per (token, block) bringing the
//     block's largest |x| into [2^13, 2^14), up or down, split into
//     hi = f16(x') and lo = f16(x' - hi): hi + lo holds about 22 bits of x'
//     relative to the block's largest. Both parts go through the MMA, and the
//     result is scaled back by 2^e (exact). Scaling up matters as much as
//     down: without it a block of activations near 1e-5 would fall into f16's
//     subnormals and keep a few bits, and one below 3e-8 would be zero.
//   - products of an f16 quant and an f16 part are exact in f32; the tensor
//     cores accumulate in f32.
//
// Layout of the work: a block of 8 warps takes 16 weight rows (an MMA's M)
// and 32 tokens (4 MMA tiles of N = 8). The row's quantisation blocks are
// staged 8 at a time (the tokens' activations as hi / lo f16 pairs in shared
// memory, padded so the B-fragment reads of a warp hit 32 banks); warp w
// takes block w of each stage, so the 8 warps' weight loads are in flight
// together. Each warp sums its blocks in order; at the end the 8 partial sums
// of an output are added in warp order.
//
// Split over a cluster (Hopper): a launch of few blocks (a decode step's
// small matrices: 36 blocks for a 576-row matrix at one token, on 132 SMs)
// leaves most of the GPU idle while each block walks its stages one after
// another. Where that pays (split_ranks below), each 16-row group becomes a
// cluster of one block per stage: block r computes stage r only, and rank 0
// reads the ranks' per-warp sums from their shared memory and adds them, for
// each warp, in stage order, then over the warps in warp order. That is the unsplit kernel's arithmetic exactly (its warp w adds
// block r's product to its sum at stage r; a rank's sum is 0 + that product,
// the same value but for -0 -> +0, which no later sum can tell apart), so
// the choice, which depends on the token count, leaves every bit as it is
// (the tests force both ways and compare).
//
// Fusions as matvec_q.cu's: an input norm's scales (warp w: the block's
// tokens w, w + 8, ...; each rank of a split cluster its own) applied while
// staging, and add_to_y in the final write.
//
// Invariance: an MMA's output column depends only on its own B column (the
// token) and the A rows, and everything else is per token, so a token's bits
// do not depend on the other tokens of the launch or their tiles (the tests
// check it as for the f32 kernel). The bits do differ from the f32 kernel's.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .f16 inputs): lane = 4 g + c;
//   A (16 x 16, row major): a0 = rows g, cols 2c, 2c+1; a1 = row g+8, cols
//     2c, 2c+1; a2 = row g, cols 2c+8, 2c+9; a3 = row g+8, cols 2c+8, 2c+9;
//   B (16 x 8): b0 = rows 2c, 2c+1 of col g; b1 = rows 2c+8, 2c+9 of col g;
//   C (16 x 8, f32): c0, c1 = row g, cols 2c, 2c+1; c2, c3 = row g+8.
// Each 32-bit register holds two f16, the lower-numbered element in its low half.
#include "kernels/cuda/matvec_mma.cuh"

#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cstdint>

#include "kernels/cuda/activations.cuh"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"
#include "kernels/cuda/row_norm.cuh"

namespace kvscope::cuda {
namespace {

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

// grid.x: 16-row groups of the outputs' rows one after the other (split: a
// cluster of one block per stage for each group); grid.y: groups of 32 tokens.
template <TensorType kType, bool kSplit>
__global__ void __launch_bounds__(kThreads)
    mma_multi_kernel(MultiOutputs outputs, int64_t row_len, const float* x, int64_t num_tokens, InputNorm norm) {
  wait_for_previous_kernel();  // a long kernel: the next one starts as it exits
  __shared__ Shared sh;
  __shared__ float token_scale[kTokens];
  const Place at = place_of<kSplit>(num_tokens, row_len);
  // With a norm, the block's token scales first (the stage loop's first barrier publishes them).
  if (norm.weight) block_rms_scales(x, row_len, at.t0, at.tile, norm.eps, token_scale);
  const int warp = at.warp, g = at.g, c = at.c, tile = at.tile, tiles = at.tiles;
  const int64_t t0 = at.t0, row0 = at.row0;
  // This thread's two weight rows (a row past the end reads output 0's row 0 and is not stored).
  MatvecOutput oa, ob;
  int64_t la, lb;
  const bool has_a = find_output(outputs, row0 + g, oa, la);
  const bool has_b = find_output(outputs, row0 + g + 8, ob, lb);
  const uint8_t* wa = weight_row<kType>(has_a ? oa.w : outputs.out[0].w, has_a ? la : 0, row_len);
  const uint8_t* wb = weight_row<kType>(has_b ? ob.w : outputs.out[0].w, has_b ? lb : 0, row_len);

  float acc[kTiles][4] = {};
  for (int64_t b0 = at.b_begin; b0 < at.b_end; b0 += kStageBlocks) {
    const int nb = static_cast<int>(min(static_cast<int64_t>(kStageBlocks), at.b_end - b0));
    // This warp's block of the stage: its weights' loads go out before the barrier.
    const bool mine = warp < nb;
    RowBlock ra{}, rb{};
    if (mine) {
      ra = load_row_block<kType>(wa + (b0 + warp) * kBlockBytes<kType>, c);
      rb = load_row_block<kType>(wb + (b0 + warp) * kBlockBytes<kType>, c);
    }
    __syncthreads();  // the previous stage is read
    stage_activations(sh, x, row_len, t0, tile, tiles * kTileTokens, b0, nb, norm.weight, token_scale);
    __syncthreads();
    if (mine) stage_block_products<kType>(stage_view(sh), warp, ra, rb, tiles, acc);
  }
  __syncthreads();  // the stage becomes the partial sums
  store_partials(sh.partial, 0, acc, tiles);
  __syncthreads();
  cluster_barrier<kSplit>();  // every rank's partial sums are in place
  if (writes_outputs<kSplit>()) {
    for (int p = threadIdx.x; p < kRows * tiles * kTileTokens; p += kThreads) {
      const int row = p / (tiles * kTileTokens);
      const int t = p % (tiles * kTileTokens);
      if (t >= tile) continue;
      MatvecOutput o;
      int64_t local;
      if (!find_output(outputs, row0 + row, o, local)) continue;
      float& y = o.y[(t0 + t) * o.ld + local];
      const float sum = output_sum<kSplit>(sh.partial, 0, row, t);
      y = o.add_to_y ? __fadd_rn(y, sum) : sum;
    }
  }
  cluster_barrier<kSplit>();
}

// Row r of the gate and of the up projection, then act(gate) * up.
template <TensorType kType, typename Act, bool kSplit>
__global__ void __launch_bounds__(kThreads)
    mma_glu_kernel(const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len, const float* x,
                   int64_t num_tokens, float* out, int64_t ld, InputNorm norm) {
  wait_for_previous_kernel();  // a long kernel: the next one starts as it exits
  __shared__ Shared sh;
  __shared__ float token_scale[kTokens];
  const Place at = place_of<kSplit>(num_tokens, row_len);
  // With a norm, the block's token scales first (the stage loop's first barrier publishes them).
  if (norm.weight) block_rms_scales(x, row_len, at.t0, at.tile, norm.eps, token_scale);
  const int warp = at.warp, g = at.g, c = at.c, tile = at.tile, tiles = at.tiles;
  const int64_t t0 = at.t0, row0 = at.row0;
  const int64_t ra_row = min(row0 + g, num_rows - 1);  // past the end: read a real row, store nothing
  const int64_t rb_row = min(row0 + g + 8, num_rows - 1);
  const uint8_t* ga = weight_row<kType>(w_gate, ra_row, row_len);
  const uint8_t* gb = weight_row<kType>(w_gate, rb_row, row_len);
  const uint8_t* ua = weight_row<kType>(w_up, ra_row, row_len);
  const uint8_t* ub = weight_row<kType>(w_up, rb_row, row_len);

  float gate[kTiles][4] = {}, up[kTiles][4] = {};
  for (int64_t b0 = at.b_begin; b0 < at.b_end; b0 += kStageBlocks) {
    const int nb = static_cast<int>(min(static_cast<int64_t>(kStageBlocks), at.b_end - b0));
    const bool mine = warp < nb;
    RowBlock g_a{}, g_b{}, u_a{}, u_b{};
    if (mine) {
      const int64_t offset = (b0 + warp) * kBlockBytes<kType>;
      g_a = load_row_block<kType>(ga + offset, c);
      g_b = load_row_block<kType>(gb + offset, c);
      u_a = load_row_block<kType>(ua + offset, c);
      u_b = load_row_block<kType>(ub + offset, c);
    }
    __syncthreads();
    stage_activations(sh, x, row_len, t0, tile, tiles * kTileTokens, b0, nb, norm.weight, token_scale);
    __syncthreads();
    if (mine) {
      stage_block_products<kType>(stage_view(sh), warp, g_a, g_b, tiles, gate);
      stage_block_products<kType>(stage_view(sh), warp, u_a, u_b, tiles, up);
    }
  }
  __syncthreads();
  store_partials(sh.partial, 0, gate, tiles);
  store_partials(sh.partial, 1, up, tiles);
  __syncthreads();
  cluster_barrier<kSplit>();
  if (writes_outputs<kSplit>()) {
    const Act act;
    for (int p = threadIdx.x; p < kRows * tiles * kTileTokens; p += kThreads) {
      const int row = p / (tiles * kTileTokens);
      const int t = p % (tiles * kTileTokens);
      if (t >= tile || row0 + row >= num_rows) continue;
      out[(t0 + t) * ld + row0 + row] =
          __fmul_rn(act(output_sum<kSplit>(sh.partial, 0, row, t)), output_sum<kSplit>(sh.partial, 1, row, t));
    }
  }
  cluster_barrier<kSplit>();
}

// The sweep (matvec_mma.cu's top comment has the plain layout): a launch of
// many more blocks than the GPU holds at once (the head: 3,072 row groups;
// a prefill chunk's projections: tens of row groups times tens of token
// groups) converts each token's activations to f16 pairs once per 16 rows,
// and that conversion, not the tensor cores, bounds it. A sweep block stages
// its 32 tokens' whole rows once, in dynamic shared memory, then takes
// `groups` consecutive 16-row groups one after another, reading the staged
// pairs for each. Per output the arithmetic is the plain kernel's, in its
// order: warp w takes blocks w, w + 8, ... of the row, adds their products
// in that order, and the 8 warps' sums are added in warp order; so the bits
// are the plain launch's (the tests force both and compare).
//
// Rows up to kMaxSweepRowLen weights: 32 tokens' staged rows of 640 weights
// are 83 KB, and with the partial sums two blocks fit a Hopper
// multiprocessor (228 KB of shared memory).
constexpr int64_t kMaxSweepRowLen = 640;
constexpr int kForcedSweepGroups = 3;  // TensorCoreSplit::kSweep (tests, benchmark)
constexpr int64_t kMaxSweepGroups = 64;

// Words of one staged token row of nq blocks: padded to 4 mod 32, so that the
// B-fragment reads of a warp hit 32 banks (as kRowWords).
__host__ __device__ constexpr int sweep_row_words(int nq) { return nq * kBlockWords + ((nq % 2 == 0) ? 4 : 20); }

// The sweep's dynamic shared memory, in 4-byte words from its start: hi and lo
// pairs, sums of x, scales, the token scales of an input norm, then one
// [kWarps][kRows][kTokens] array of partial sums.
struct SweepLayout {
  int row_words;
  int hi, lo, sum_x, scale, token_scale, partial, words;
};

__host__ __device__ constexpr SweepLayout sweep_layout(int64_t row_len) {
  const int nq = static_cast<int>(row_len / kQBlockElems);
  SweepLayout l{};
  l.row_words = sweep_row_words(nq);
  l.hi = 0;
  l.lo = l.hi + kTokens * l.row_words;
  l.sum_x = l.lo + kTokens * l.row_words;
  l.scale = l.sum_x + kTokens * nq;
  l.token_scale = l.scale + kTokens * nq;
  l.partial = l.token_scale + kTokens;
  l.partial += (4 - l.partial % 4) % 4;  // 16-byte aligned
  l.words = l.partial + kWarps * kRows * kTokens;
  return l;
}

inline size_t sweep_bytes(int64_t row_len) { return static_cast<size_t>(sweep_layout(row_len).words) * 4; }

// Stages every block of the block's tokens' rows (zeros past the tile) into
// the sweep's shared memory, after the token scales of an input norm.
__device__ inline StageView stage_whole_rows(uint32_t* smem, const SweepLayout& l, const float* x, int64_t row_len,
                                             int64_t t0, int tile, int tiles, InputNorm norm) {
  const int nq = static_cast<int>(row_len / kQBlockElems);
  float* token_scale = reinterpret_cast<float*>(smem + l.token_scale);
  if (norm.weight) block_rms_scales(x, row_len, t0, tile, norm.eps, token_scale);
  __syncthreads();  // the token scales
  const StageView v{smem + l.hi, smem + l.lo, reinterpret_cast<float*>(smem + l.sum_x),
                    reinterpret_cast<float*>(smem + l.scale), l.row_words, nq};
  for (int p = threadIdx.x; p < tiles * kTileTokens * nq; p += kThreads) {
    const int t = p / nq;
    const int i = p % nq;
    const bool real = t < tile;
    stage_block(v, t, i, real ? x + (t0 + t) * row_len : nullptr, i, norm.weight,
                real && norm.weight ? token_scale[t] : 0.0f);
  }
  __syncthreads();  // the staged rows
  return v;
}

// One 16-row group's products for this thread's two rows over every stage of
// the staged rows: warp w takes block w of each stage, the next stage's
// weights loaded while the current one multiplies.
template <TensorType kType, int kMatrices>
__device__ inline void sweep_group_products(const StageView& v, const uint8_t* const (&rows_a)[kMatrices],
                                            const uint8_t* const (&rows_b)[kMatrices], int64_t nq, int tiles,
                                            float (&acc)[kMatrices][kTiles][4]) {
  const int warp = threadIdx.x / kWarpSize;
  const int c = threadIdx.x % 4;
  RowBlock ra[kMatrices], rb[kMatrices];
  if (warp < nq) {
#pragma unroll
    for (int m = 0; m < kMatrices; ++m) {
      ra[m] = load_row_block<kType>(rows_a[m] + warp * kBlockBytes<kType>, c);
      rb[m] = load_row_block<kType>(rows_b[m] + warp * kBlockBytes<kType>, c);
    }
  }
  for (int64_t b0 = 0; b0 < nq; b0 += kStageBlocks) {
    const int64_t mine = b0 + warp, next = mine + kStageBlocks;
    RowBlock na[kMatrices], nb[kMatrices];
    if (next < nq) {
#pragma unroll
      for (int m = 0; m < kMatrices; ++m) {
        na[m] = load_row_block<kType>(rows_a[m] + next * kBlockBytes<kType>, c);
        nb[m] = load_row_block<kType>(rows_b[m] + next * kBlockBytes<kType>, c);
      }
    }
    if (mine < nq) {
#pragma unroll
      for (int m = 0; m < kMatrices; ++m)
        stage_block_products<kType>(v, static_cast<int>(mine), ra[m], rb[m], tiles, acc[m]);
    }
    if (next < nq) {
#pragma unroll
      for (int m = 0; m < kMatrices; ++m) {
        ra[m] = na[m];
        rb[m] = nb[m];
      }
    }
  }
}

// grid.x: runs of `groups` 16-row groups of the outputs' rows one after the
// other; grid.y: groups of 32 tokens. Dynamic shared memory: sweep_bytes.
template <TensorType kType>
__global__ void __launch_bounds__(kThreads)
    mma_sweep_multi_kernel(MultiOutputs outputs, int64_t total_rows, int64_t row_len, const float* x,
                           int64_t num_tokens, InputNorm norm, int groups) {
  wait_for_previous_kernel();  // a long kernel: the next one starts as it exits
  extern __shared__ __align__(16) uint32_t smem[];
  const SweepLayout l = sweep_layout(row_len);
  const Place at = place_of<false>(num_tokens, row_len);
  const int g = at.g, tile = at.tile, tiles = at.tiles;
  const int64_t t0 = at.t0, nq = row_len / kQBlockElems;
  const StageView v = stage_whole_rows(smem, l, x, row_len, t0, tile, tiles, norm);
  const Partials partial = reinterpret_cast<Partials>(smem + l.partial);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * groups * kRows;
  for (int64_t row0 = first; row0 < min(total_rows, first + static_cast<int64_t>(groups) * kRows); row0 += kRows) {
    // This thread's two weight rows (a row past the end reads output 0's row 0 and is not stored).
    MatvecOutput oa, ob;
    int64_t la, lb;
    const bool has_a = find_output(outputs, row0 + g, oa, la);
    const bool has_b = find_output(outputs, row0 + g + 8, ob, lb);
    const uint8_t* const wa[1] = {weight_row<kType>(has_a ? oa.w : outputs.out[0].w, has_a ? la : 0, row_len)};
    const uint8_t* const wb[1] = {weight_row<kType>(has_b ? ob.w : outputs.out[0].w, has_b ? lb : 0, row_len)};
    float acc[1][kTiles][4] = {};
    sweep_group_products<kType, 1>(v, wa, wb, nq, tiles, acc);
    __syncthreads();  // the last group's sums are read
    store_partials(partial, 0, acc[0], tiles);
    __syncthreads();
    for (int p = threadIdx.x; p < kRows * tiles * kTileTokens; p += kThreads) {
      const int row = p / (tiles * kTileTokens);
      const int t = p % (tiles * kTileTokens);
      if (t >= tile) continue;
      MatvecOutput o;
      int64_t local;
      if (!find_output(outputs, row0 + row, o, local)) continue;
      float& y = o.y[(t0 + t) * o.ld + local];
      const float sum = output_sum<false>(partial, 0, row, t);
      y = o.add_to_y ? __fadd_rn(y, sum) : sum;
    }
  }
}

// The gated feed-forward input as mma_glu_kernel computes it, swept: the
// gate's and the up projection's sums go through the one partial array in
// turn (each thread keeps its outputs' gate sums in registers), so the
// shared memory is the multi kernel's.
template <TensorType kType, typename Act>
__global__ void __launch_bounds__(kThreads)
    mma_sweep_glu_kernel(const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len, const float* x,
                         int64_t num_tokens, float* out, int64_t ld, InputNorm norm, int groups) {
  wait_for_previous_kernel();  // a long kernel: the next one starts as it exits
  extern __shared__ __align__(16) uint32_t smem[];
  const SweepLayout l = sweep_layout(row_len);
  const Place at = place_of<false>(num_tokens, row_len);
  const int g = at.g, tile = at.tile, tiles = at.tiles;
  const int64_t t0 = at.t0, nq = row_len / kQBlockElems;
  const StageView v = stage_whole_rows(smem, l, x, row_len, t0, tile, tiles, norm);
  const Partials partial = reinterpret_cast<Partials>(smem + l.partial);
  constexpr int kPerThread = kRows * kTokens / kThreads;  // outputs of a group a thread writes, at most
  const Act act;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * groups * kRows;
  for (int64_t row0 = first; row0 < min(num_rows, first + static_cast<int64_t>(groups) * kRows); row0 += kRows) {
    const int64_t ra_row = min(row0 + g, num_rows - 1);  // past the end: read a real row, store nothing
    const int64_t rb_row = min(row0 + g + 8, num_rows - 1);
    const uint8_t* const wa[2] = {weight_row<kType>(w_gate, ra_row, row_len), weight_row<kType>(w_up, ra_row, row_len)};
    const uint8_t* const wb[2] = {weight_row<kType>(w_gate, rb_row, row_len), weight_row<kType>(w_up, rb_row, row_len)};
    float acc[2][kTiles][4] = {};
    sweep_group_products<kType, 2>(v, wa, wb, nq, tiles, acc);
    const int outputs = kRows * tiles * kTileTokens;
    float gate[kPerThread];
    __syncthreads();  // the last group's sums are read
    store_partials(partial, 0, acc[0], tiles);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int p = static_cast<int>(threadIdx.x) + k * kThreads;
      gate[k] = p < outputs ? output_sum<false>(partial, 0, p / (tiles * kTileTokens), p % (tiles * kTileTokens)) : 0.0f;
    }
    __syncthreads();  // the gate's sums are read
    store_partials(partial, 0, acc[1], tiles);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int p = static_cast<int>(threadIdx.x) + k * kThreads;
      if (p >= outputs) continue;
      const int row = p / (tiles * kTileTokens);
      const int t = p % (tiles * kTileTokens);
      if (t >= tile || row0 + row >= num_rows) continue;
      out[(t0 + t) * ld + row0 + row] = __fmul_rn(act(gate[k]), output_sum<false>(partial, 0, row, t));
    }
  }
}

// Row groups per sweep block, or 1 for the plain layout. kAuto sweeps a
// launch of more than four blocks per multiprocessor's worth (two resident
// sweep blocks each), on a Hopper or later device, with rows short enough to
// stage whole: as many groups per block as leave about two blocks per
// multiprocessor. kSweep forces kForcedSweepGroups where the rows allow it.
int sweep_groups(TensorCoreSplit split, int64_t row_groups, int64_t token_groups, int64_t row_len,
                 const DeviceShape& d) {
  if (row_len > kMaxSweepRowLen || d.major < 9) return 1;
  if (split == TensorCoreSplit::kSweep) return kForcedSweepGroups;
  if (split != TensorCoreSplit::kAuto) return 1;
  const int64_t resident = 2 * static_cast<int64_t>(d.sms);
  if (row_groups * token_groups <= 2 * resident) return 1;
  const int64_t blocks_per_token_group = std::max<int64_t>(1, resident / token_groups);
  // At most kMaxSweepGroups: with more token groups than resident blocks a
  // block would otherwise walk the whole matrix (the tokens then fill the
  // GPU by themselves).
  return static_cast<int>(std::min<int64_t>((row_groups + blocks_per_token_group - 1) / blocks_per_token_group,
                                            kMaxSweepGroups));
}

// Lets each sweep kernel take its dynamic shared memory (over the default
// 48 KB), once per device (the attribute is the current device's); false if
// the runtime refuses, and the launch is then plain.
template <typename Kernel>
bool allow_sweep_smem(Kernel kernel) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(sweep_bytes(kMaxSweepRowLen))) == cudaSuccess;
}

bool sweep_kernels_ready() {
  constexpr int kDevices = 64;
  static std::atomic<int> state[kDevices];  // 0: not asked yet, 1: ready, 2: refused
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) {
    cudaGetLastError();
    return false;
  }
  int s = state[device].load(std::memory_order_acquire);
  if (s == 0) {
    bool ok = true;
    ok = allow_sweep_smem(mma_sweep_multi_kernel<TensorType::Q8_0>) && ok;
    ok = allow_sweep_smem(mma_sweep_multi_kernel<TensorType::Q4_1>) && ok;
    ok = allow_sweep_smem(mma_sweep_glu_kernel<TensorType::Q8_0, Silu>) && ok;
    ok = allow_sweep_smem(mma_sweep_glu_kernel<TensorType::Q4_1, Silu>) && ok;
    ok = allow_sweep_smem(mma_sweep_glu_kernel<TensorType::Q8_0, GeluTanh>) && ok;
    ok = allow_sweep_smem(mma_sweep_glu_kernel<TensorType::Q4_1, GeluTanh>) && ok;
    cudaGetLastError();  // a refusal is not the next launch's error
    s = ok ? 1 : 2;
    state[device].store(s, std::memory_order_release);  // two threads asking at once both set it: harmless
  }
  return s == 1;
}

// Ranks of the split clusters (the top comment), 0 for an unsplit launch:
// one per stage when there are 2 to 8 stages (8: the portable cluster size)
// on a Hopper or later device. kAuto splits only where it was measured to
// pay (gpu_kernel_bench on an H200 with every such launch split: docs/
// benchmarks/2026-11-26_cuda_kernels_h200_split_everywhere.json): rows of 4 stages or more (SmolLM2's ffn_down, 6: 14.2 ->
// 10.7 us at one token, 17.3 -> 12.4 at 16) in one group of tokens (up to
// 32) and fewer blocks than multiprocessors. With 3 stages (576-wide rows)
// the cluster's barriers cost what the shorter walk saves (8.4 -> 8.9 us for
// q at one token, 9.2 -> 15.3 for gate and up), and with two groups of
// tokens the unsplit blocks already fill more of the GPU (ffn_down at 64
// tokens: 23.9 unsplit, 32.2 split).
constexpr int64_t kMaxRanks = 8;
constexpr int64_t kMinAutoRanks = 4;

int split_ranks(TensorCoreSplit split, int64_t row_groups, int64_t token_groups, int64_t row_len,
                const DeviceShape& d) {
  const int64_t stages = num_blocks_for(row_len / kQBlockElems, kStageBlocks);
  if (split == TensorCoreSplit::kNever || split == TensorCoreSplit::kSweep || stages < 2 || stages > kMaxRanks) {
    return 0;
  }
  if (d.major < 9) return 0;
  if (split == TensorCoreSplit::kAlways) return static_cast<int>(stages);
  const bool pays = stages >= kMinAutoRanks && token_groups == 1 && row_groups < d.sms;
  return pays ? static_cast<int>(stages) : 0;
}

// `unsplit` on `grid`, or `split` on clusters of `ranks` blocks per 16-row
// group (grid.x times as many blocks).
template <typename... Params, typename... Args>
cudaError_t launch(void (*unsplit)(Params...), void (*split)(Params...), dim3 grid, int ranks, cudaStream_t stream,
                   Args... args) {
  if (ranks == 0) return launch_kernel(unsplit, grid, kThreads, 0, stream, args...);
  const dim3 clusters(grid.x * static_cast<unsigned>(ranks), grid.y);
  return launch_clusters(static_cast<unsigned>(ranks), split, clusters, kThreads, 0, stream, args...);
}

}  // namespace

int tensor_core_split_ranks(int64_t num_rows, int64_t row_len, int64_t num_tokens, TensorCoreSplit split, int major,
                            int sms) {
  if (num_rows <= 0 || row_len <= 0 || num_tokens <= 0) return 0;
  return split_ranks(split, num_blocks_for(num_rows, kRows), num_blocks_for(num_tokens, kTokens), row_len,
                     DeviceShape{major, sms});
}

int tensor_core_sweep_groups(int64_t num_rows, int64_t row_len, int64_t num_tokens, TensorCoreSplit split, int major,
                             int sms) {
  if (num_rows <= 0 || row_len <= 0 || num_tokens <= 0) return 1;
  return sweep_groups(split, num_blocks_for(num_rows, kRows), num_blocks_for(num_tokens, kTokens), row_len,
                      DeviceShape{major, sms});
}

int tensor_core_sweep_groups(int64_t num_rows, int64_t row_len, int64_t num_tokens, TensorCoreSplit split) {
  const DeviceShape d = current_device_shape();
  return tensor_core_sweep_groups(num_rows, row_len, num_tokens, split, d.major, d.sms);
}

int tensor_core_split_ranks(int64_t num_rows, int64_t row_len, int64_t num_tokens, TensorCoreSplit split) {
  const DeviceShape d = current_device_shape();
  return tensor_core_split_ranks(num_rows, row_len, num_tokens, split, d.major, d.sms);
}

cudaError_t matvec_mma_multi(TensorType type, const MultiOutputs& outputs, int64_t total_rows, int64_t row_len,
                             const float* x, int64_t num_tokens, cudaStream_t stream, TensorCoreSplit split,
                             InputNorm norm) {
  const char* op = "matvec_q (tensor cores)";
  KVSCOPE_CUDA_REQUIRE(op, total_rows / kRows < 0x7fffffff / kMaxRanks);
  if (num_tokens == 0) return cudaSuccess;
  const dim3 grid(num_blocks_for(total_rows, kRows), num_blocks_for(num_tokens, kTokens));
  const DeviceShape device = current_device_shape();
  const int groups = sweep_groups(split, grid.x, grid.y, row_len, device);
  if (groups > 1 && sweep_kernels_ready()) {
    const dim3 sweep_grid(num_blocks_for(grid.x, groups), grid.y);
    const auto kernel =
        type == TensorType::Q8_0 ? mma_sweep_multi_kernel<TensorType::Q8_0> : mma_sweep_multi_kernel<TensorType::Q4_1>;
    return launch_kernel(kernel, sweep_grid, kThreads, sweep_bytes(row_len), stream, outputs, total_rows, row_len, x,
                         num_tokens, norm, groups);
  }
  const int ranks = split_ranks(split, grid.x, grid.y, row_len, device);
  if (type == TensorType::Q8_0) {
    return launch(mma_multi_kernel<TensorType::Q8_0, false>, mma_multi_kernel<TensorType::Q8_0, true>, grid, ranks,
                  stream, outputs, row_len, x, num_tokens, norm);
  }
  return launch(mma_multi_kernel<TensorType::Q4_1, false>, mma_multi_kernel<TensorType::Q4_1, true>, grid, ranks,
                stream, outputs, row_len, x, num_tokens, norm);
}

cudaError_t matvec_mma_glu(TensorType type, const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len,
                           const float* x, int64_t num_tokens, GluActivation activation, float* out, int64_t ld,
                           cudaStream_t stream, TensorCoreSplit split, InputNorm norm) {
  const char* op = "matvec_q_glu (tensor cores)";
  KVSCOPE_CUDA_REQUIRE(op, num_rows / kRows < 0x7fffffff / kMaxRanks);
  if (num_tokens == 0) return cudaSuccess;
  const dim3 grid(num_blocks_for(num_rows, kRows), num_blocks_for(num_tokens, kTokens));
  const DeviceShape device = current_device_shape();
  constexpr TensorType kQ8 = TensorType::Q8_0, kQ4 = TensorType::Q4_1;
  const int groups = sweep_groups(split, grid.x, grid.y, row_len, device);
  if (groups > 1 && sweep_kernels_ready()) {
    const dim3 sweep_grid(num_blocks_for(grid.x, groups), grid.y);
    const bool silu = activation == GluActivation::Silu;
    const auto kernel = type == kQ8 ? (silu ? mma_sweep_glu_kernel<kQ8, Silu> : mma_sweep_glu_kernel<kQ8, GeluTanh>)
                                    : (silu ? mma_sweep_glu_kernel<kQ4, Silu> : mma_sweep_glu_kernel<kQ4, GeluTanh>);
    return launch_kernel(kernel, sweep_grid, kThreads, sweep_bytes(row_len), stream, w_gate, w_up, num_rows, row_len,
                         x, num_tokens, out, ld, norm, groups);
  }
  const int ranks = split_ranks(split, grid.x, grid.y, row_len, device);
  const auto go = [&](auto unsplit_kernel, auto split_kernel) {
    return launch(unsplit_kernel, split_kernel, grid, ranks, stream, w_gate, w_up, num_rows, row_len, x, num_tokens,
                  out, ld, norm);
  };
  if (activation == GluActivation::Silu) {
    return type == kQ8 ? go(mma_glu_kernel<kQ8, Silu, false>, mma_glu_kernel<kQ8, Silu, true>)
                       : go(mma_glu_kernel<kQ4, Silu, false>, mma_glu_kernel<kQ4, Silu, true>);
  }
  return type == kQ8 ? go(mma_glu_kernel<kQ8, GeluTanh, false>, mma_glu_kernel<kQ8, GeluTanh, true>)
                     : go(mma_glu_kernel<kQ4, GeluTanh, false>, mma_glu_kernel<kQ4, GeluTanh, true>);
}

}  // namespace kvscope::cuda
