// The sweep layout of the tensor-core matvec kernels (matvec_mma.cu's top
// comment has the plain one and the arithmetic). Laid out plain, a launch of
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
// Tested by matvec_q_test.cpp (TensorCoreSweepKeepsTheBits,
// AutoSweepsManyBlocksWithThePlainBits, SweepRuleSweepsOnlyLaunchesOfManyBlocks).
#include "kernels/cuda/matvec_mma_sweep.cuh"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels/cuda/activations.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/matvec_mma_tile.cuh"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
using namespace mma;
namespace {

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

// What both sweep kernels start with: the block's tokens (grid.y: groups of
// 32) staged whole, where its partial sums go, and its rows [row_begin,
// row_end): `groups` 16-row groups of num_rows (grid.x: runs of groups).
struct SweepBlock {
  StageView staged;
  Partials partial;
  int g, tile, tiles;
  int64_t t0, nq, row_begin, row_end;
};

__device__ inline SweepBlock begin_sweep(uint32_t* smem, const float* x, int64_t row_len, int64_t num_tokens,
                                         int64_t num_rows, InputNorm norm, int groups) {
  const SweepLayout l = sweep_layout(row_len);
  const Place at = place_of<false>(num_tokens, row_len);
  SweepBlock b;
  b.g = at.g;
  b.tile = at.tile;
  b.tiles = at.tiles;
  b.t0 = at.t0;
  b.nq = row_len / kQBlockElems;
  b.staged = stage_whole_rows(smem, l, x, row_len, at.t0, at.tile, at.tiles, norm);
  b.partial = reinterpret_cast<Partials>(smem + l.partial);
  b.row_begin = static_cast<int64_t>(blockIdx.x) * groups * kRows;
  b.row_end = min(num_rows, b.row_begin + static_cast<int64_t>(groups) * kRows);
  return b;
}

// grid.x: runs of `groups` 16-row groups of the outputs' rows one after the
// other; grid.y: groups of 32 tokens. Dynamic shared memory: sweep_bytes.
template <TensorType kType>
__global__ void __launch_bounds__(kThreads)
    mma_sweep_multi_kernel(MultiOutputs outputs, int64_t total_rows, int64_t row_len, const float* x,
                           int64_t num_tokens, InputNorm norm, int groups) {
  wait_for_previous_kernel();  // a long kernel: the next one starts as it exits
  extern __shared__ __align__(16) uint32_t smem[];
  const SweepBlock b = begin_sweep(smem, x, row_len, num_tokens, total_rows, norm, groups);
  const int g = b.g, tile = b.tile, tiles = b.tiles;
  const int64_t t0 = b.t0;
  for (int64_t row0 = b.row_begin; row0 < b.row_end; row0 += kRows) {
    // This thread's two weight rows.
    const uint8_t* const wa[1] = {multi_weight_row<kType>(outputs, row0 + g, row_len)};
    const uint8_t* const wb[1] = {multi_weight_row<kType>(outputs, row0 + g + 8, row_len)};
    float acc[1][kTiles][4] = {};
    sweep_group_products<kType, 1>(b.staged, wa, wb, b.nq, tiles, acc);
    __syncthreads();  // the last group's sums are read
    store_partials(b.partial, 0, acc[0], tiles);
    __syncthreads();
    write_multi_outputs<false>(outputs, b.partial, row0, t0, tile, tiles);
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
  const SweepBlock b = begin_sweep(smem, x, row_len, num_tokens, num_rows, norm, groups);
  const int g = b.g, tile = b.tile, tiles = b.tiles;
  const int64_t t0 = b.t0;
  constexpr int kPerThread = kRows * kTokens / kThreads;  // outputs of a group a thread writes, at most
  const Act act;
  for (int64_t row0 = b.row_begin; row0 < b.row_end; row0 += kRows) {
    const int64_t ra_row = min(row0 + g, num_rows - 1);  // past the end: read a real row, store nothing
    const int64_t rb_row = min(row0 + g + 8, num_rows - 1);
    const uint8_t* const wa[2] = {weight_row<kType>(w_gate, ra_row, row_len), weight_row<kType>(w_up, ra_row, row_len)};
    const uint8_t* const wb[2] = {weight_row<kType>(w_gate, rb_row, row_len), weight_row<kType>(w_up, rb_row, row_len)};
    float acc[2][kTiles][4] = {};
    sweep_group_products<kType, 2>(b.staged, wa, wb, b.nq, tiles, acc);
    const int outputs = kRows * tiles * kTileTokens;
    float gate[kPerThread];
    __syncthreads();  // the last group's sums are read
    store_partials(b.partial, 0, acc[0], tiles);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int p = static_cast<int>(threadIdx.x) + k * kThreads;
      gate[k] = p < outputs ? output_sum<false>(b.partial, 0, p / (tiles * kTileTokens), p % (tiles * kTileTokens)) : 0.0f;
    }
    __syncthreads();  // the gate's sums are read
    store_partials(b.partial, 0, acc[1], tiles);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int p = static_cast<int>(threadIdx.x) + k * kThreads;
      if (p >= outputs) continue;
      const int row = p / (tiles * kTileTokens);
      const int t = p % (tiles * kTileTokens);
      if (t >= tile || row0 + row >= num_rows) continue;
      out[(t0 + t) * ld + row0 + row] = __fmul_rn(act(gate[k]), output_sum<false>(b.partial, 0, row, t));
    }
  }
}

// Lets each sweep kernel take its dynamic shared memory (over the default
// 48 KB); false if the runtime refuses.
template <typename Kernel>
bool allow_sweep_smem(Kernel kernel) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(sweep_bytes(kMaxSweepRowLen))) == cudaSuccess;
}

}  // namespace

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

// Once per device (the attribute is the current device's).
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

cudaError_t launch_sweep_multi(TensorType type, const MultiOutputs& outputs, int64_t total_rows, int64_t row_len,
                               const float* x, int64_t num_tokens, InputNorm norm, int groups, cudaStream_t stream) {
  const dim3 grid(num_blocks_for(num_blocks_for(total_rows, kRows), groups), num_blocks_for(num_tokens, kTokens));
  const auto kernel =
      type == TensorType::Q8_0 ? mma_sweep_multi_kernel<TensorType::Q8_0> : mma_sweep_multi_kernel<TensorType::Q4_1>;
  return launch_kernel(kernel, grid, kThreads, sweep_bytes(row_len), stream, outputs, total_rows, row_len, x,
                       num_tokens, norm, groups);
}

cudaError_t launch_sweep_glu(TensorType type, const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len,
                             const float* x, int64_t num_tokens, GluActivation activation, float* out, int64_t ld,
                             InputNorm norm, int groups, cudaStream_t stream) {
  const dim3 grid(num_blocks_for(num_blocks_for(num_rows, kRows), groups), num_blocks_for(num_tokens, kTokens));
  constexpr TensorType kQ8 = TensorType::Q8_0, kQ4 = TensorType::Q4_1;
  const bool silu = activation == GluActivation::Silu;
  const auto kernel = type == kQ8 ? (silu ? mma_sweep_glu_kernel<kQ8, Silu> : mma_sweep_glu_kernel<kQ8, GeluTanh>)
                                  : (silu ? mma_sweep_glu_kernel<kQ4, Silu> : mma_sweep_glu_kernel<kQ4, GeluTanh>);
  return launch_kernel(kernel, grid, kThreads, sweep_bytes(row_len), stream, w_gate, w_up, num_rows, row_len, x,
                       num_tokens, out, ld, norm, groups);
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

}  // namespace kvscope::cuda
