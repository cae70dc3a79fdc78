// Device code shared by the passes of the GPU attention (paged_prefill.cu):
// one warp folds one (query row, query head) over tiles of kAttentionTile
// absolute key positions held in shared memory, keeping the running state
// (max, sum of exp(score - max), unnormalised output) of
// kernels/cpu/attention_state.h; states merge with one formula (merge_state).
//
// Bitwise contract: the arithmetic of a tile depends only on the row's q, the
// tile's K/V rows and the sub-range [lo, hi) of positions the row sees in it
// (lane j <-> position lo + j), never on which other rows or heads share the
// block or the shared memory. Every float operation is an explicit
// round-to-nearest intrinsic (__fmaf_rn, __fmul_rn, __fadd_rn, ...), so the
// compiler has no contraction choice that could differ between the kernels
// or call sites using this code; the cascade, flat, split-KV and combine
// passes therefore compute bit-identical states for the same tiles and
// partitions.
#pragma once

#include <cstdint>

#include "kernels/cpu/paged_attention.h"
#include "kernels/cuda/device_util.cuh"

namespace kvscope::cuda {

inline constexpr int32_t kMaxPrefillHeadDim = 256;
inline constexpr int kPrefillDimsPerLane = kMaxPrefillHeadDim / kWarpSize;  // o[d] for d = lane + 32 * i

// A warp's running attention state; every lane holds the same max and sum.
struct WarpState {
  float max;
  float sum;
  float o[kPrefillDimsPerLane];
};

__device__ inline void clear_state(WarpState& st) {
  st.max = -INFINITY;
  st.sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kPrefillDimsPerLane; ++i) st.o[i] = 0.0f;
}

// merge_attention_state(a, o_a, b, o_b) of the CPU: an empty b leaves a
// unchanged, an empty a becomes a copy of b, else both are rescaled to the
// larger max. The one merge of the GPU attention: a tile into a partition's
// state (attend_tile), a partition into the merged state of the partitions
// before it (the flat pass), the partition states of a split row (the
// combine). A non-empty state has sum >= 1 (its max term is exp(0)).
__device__ inline void merge_state(WarpState& a, float b_max, float b_sum, const float (&b_o)[kPrefillDimsPerLane]) {
  if (b_sum == 0.0f) return;
  if (a.sum == 0.0f) {
    a.max = b_max;
    a.sum = b_sum;
#pragma unroll
    for (int i = 0; i < kPrefillDimsPerLane; ++i) a.o[i] = b_o[i];
    return;
  }
  const float m = a.max > b_max ? a.max : b_max;
  const float fa = expf(__fsub_rn(a.max, m));
  const float fb = expf(__fsub_rn(b_max, m));
#pragma unroll
  for (int i = 0; i < kPrefillDimsPerLane; ++i) a.o[i] = __fadd_rn(__fmul_rn(a.o[i], fa), __fmul_rn(b_o[i], fb));
  a.sum = __fadd_rn(__fmul_rn(a.sum, fa), __fmul_rn(b_sum, fb));
  a.max = m;
}

__device__ inline void merge_state(WarpState& a, const WarpState& b) { merge_state(a, b.max, b.sum, b.o); }

// out[d] = o[d] / sum (as the CPU's own_pass divides: one reciprocal, then a
// product per element); lane writes d = lane + 32 i of out_row [head_dim].
__device__ inline void write_output(const WarpState& st, float* out_row, int32_t head_dim) {
  const int lane = threadIdx.x % kWarpSize;
  const float inv = st.sum > 0.0f ? __fdiv_rn(1.0f, st.sum) : 0.0f;
#pragma unroll
  for (int i = 0; i < kPrefillDimsPerLane; ++i) {
    const int32_t d = lane + kWarpSize * i;
    if (d < head_dim) out_row[d] = __fmul_rn(st.o[i], inv);
  }
}

// Shared-memory tile rows are padded to head_dim + 1 floats so that lane j
// reading K[j][d] (the score loop) hits bank (j + d) % 32 when head_dim is a
// multiple of 32: no bank conflicts.
__host__ __device__ inline int32_t tile_row_stride(int32_t head_dim) { return head_dim + 1; }

// Folds the tile's keys [lo, hi) into st, as merge_attention_state does on
// the CPU: the tile's own state first (max over its scores, weights
// exp(score - max) summed by a fixed xor tree over the lanes, output
// sum_j w_j V[j][d] in j order), then the merge. k_s / v_s hold the tile's
// rows from position tile_start, tile_row_stride(head_dim) floats apart;
// q_s holds the warp's query row. Called by all 32 lanes of the warp.
//
// kHeadDim > 0 is the same arithmetic with the head size known at compile
// time: its loops unroll, so a lane's shared-memory reads are issued ahead of
// the FMA chains that consume them instead of one latency per step of the
// chain (an H200 profile put ~2 us per tile on the runtime loops at head_dim
// 64, which dominated a decode row's attention). Keys past the tile's last
// (j >= n) are read from a clamped row and their products discarded by a
// select, so the chains see exactly the runtime loop's operations.
template <int32_t kHeadDim>
__device__ inline void attend_tile_of(WarpState& st, const float* q_s, const float* k_s, const float* v_s,
                                      int32_t tile_start, int32_t lo, int32_t hi, int32_t runtime_head_dim,
                                      float scale, float softcap) {
  const int lane = threadIdx.x % kWarpSize;
  const int32_t head_dim = kHeadDim > 0 ? kHeadDim : runtime_head_dim;
  const int32_t n = hi - lo;
  const int32_t stride = tile_row_stride(head_dim);
  const int32_t first_row = lo - tile_start;
  // score[j] = scale * sum_d q[d] K[lo + j][d], an FMA chain over d in order.
  float score = -INFINITY;
  if (lane < n) {
    const float* k_row = k_s + (first_row + lane) * stride;
    float dot = 0.0f;
    if constexpr (kHeadDim > 0) {
#pragma unroll
      for (int32_t d = 0; d < kHeadDim; ++d) dot = __fmaf_rn(q_s[d], k_row[d], dot);
    } else {
      for (int32_t d = 0; d < head_dim; ++d) dot = __fmaf_rn(q_s[d], k_row[d], dot);
    }
    score = __fmul_rn(dot, scale);
    if (softcap > 0.0f) score = __fmul_rn(softcap, tanhf(__fdiv_rn(score, softcap)));
  }
  const float tile_max = warp_max(score);  // exact in any order
  const float w = lane < n ? expf(__fsub_rn(score, tile_max)) : 0.0f;
  float tile_sum = w;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    tile_sum = __fadd_rn(tile_sum, __shfl_xor_sync(0xffffffffu, tile_sum, offset));
  }
  // o_tile[d] = sum_j w_j V[lo + j][d], j in order; lane owns d = lane + 32 i.
  float o_tile[kPrefillDimsPerLane];
#pragma unroll
  for (int i = 0; i < kPrefillDimsPerLane; ++i) o_tile[i] = 0.0f;
  if constexpr (kHeadDim > 0) {
    constexpr int kDims = (kHeadDim + kWarpSize - 1) / kWarpSize;
#pragma unroll
    for (int32_t j = 0; j < kAttentionTile; ++j) {
      const float wj = __shfl_sync(0xffffffffu, w, j);
      const float* v_row = v_s + min(first_row + j, kAttentionTile - 1) * stride;  // in the tile even for j >= n
#pragma unroll
      for (int i = 0; i < kDims; ++i) {
        const int32_t d = lane + kWarpSize * i;
        if (d < kHeadDim) {
          const float sum = __fmaf_rn(wj, v_row[d], o_tile[i]);
          o_tile[i] = j < n ? sum : o_tile[i];
        }
      }
    }
  } else {
    for (int32_t j = 0; j < n; ++j) {
      const float wj = __shfl_sync(0xffffffffu, w, j);
      const float* v_row = v_s + (first_row + j) * stride;
#pragma unroll
      for (int i = 0; i < kPrefillDimsPerLane; ++i) {
        const int32_t d = lane + kWarpSize * i;
        if (d < head_dim) o_tile[i] = __fmaf_rn(wj, v_row[d], o_tile[i]);
      }
    }
  }
  merge_state(st, tile_max, tile_sum, o_tile);
}

// attend_tile_of for the head sizes of the models kvscope runs on the GPU
// (64: SmolLM2; 128: most 1-8B models), the runtime loops for any other.
__device__ inline void attend_tile(WarpState& st, const float* q_s, const float* k_s, const float* v_s,
                                   int32_t tile_start, int32_t lo, int32_t hi, int32_t head_dim, float scale,
                                   float softcap) {
  if (head_dim == 64) {
    attend_tile_of<64>(st, q_s, k_s, v_s, tile_start, lo, hi, head_dim, scale, softcap);
  } else if (head_dim == 128) {
    attend_tile_of<128>(st, q_s, k_s, v_s, tile_start, lo, hi, head_dim, scale, softcap);
  } else {
    attend_tile_of<0>(st, q_s, k_s, v_s, tile_start, lo, hi, head_dim, scale, softcap);
  }
}

}  // namespace kvscope::cuda
