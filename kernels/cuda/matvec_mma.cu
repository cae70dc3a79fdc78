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
// Swept (matvec_mma_sweep.cu): a launch of many more blocks than the GPU
// holds instead has each block stage its tokens' whole rows once and take
// several 16-row groups, with the same bits. The pieces all three layouts
// share are in matvec_mma_tile.cuh.
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
#include "kernels/cuda/matvec_mma_sweep.cuh"
#include "kernels/cuda/matvec_mma_tile.cuh"
#include "kernels/cuda/overlapped_launch.cuh"
#include "kernels/cuda/row_norm.cuh"

namespace kvscope::cuda {
using namespace mma;
namespace {

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
  // This thread's two weight rows.
  const uint8_t* wa = multi_weight_row<kType>(outputs, row0 + g, row_len);
  const uint8_t* wb = multi_weight_row<kType>(outputs, row0 + g + 8, row_len);

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
  if (writes_outputs<kSplit>()) write_multi_outputs<kSplit>(outputs, sh.partial, row0, t0, tile, tiles);
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
    return launch_sweep_multi(type, outputs, total_rows, row_len, x, num_tokens, norm, groups, stream);
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
    return launch_sweep_glu(type, w_gate, w_up, num_rows, row_len, x, num_tokens, activation, out, ld, norm, groups,
                            stream);
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
