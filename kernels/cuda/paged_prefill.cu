// Paged prefill / mixed-batch attention and the cascade shared pass; see
// paged_prefill.cuh. One kernel runs both passes (so the tile arithmetic is
// literally the same code): grid (plan item, KV head), block of
// rows_per_block * group warps (at least kMinWarps, the rest only loading
// tiles); warp w runs row rows[first + w / group] for query head
// kv_head * group + w % group.
//
// Shared memory: with 16-byte copies (kv_tile_loader.cuh) first the staging
// buffer [2][K, V][32][row bytes], then k_s[32][head_dim + 1],
// v_s[32][head_dim + 1] (one tile of the KV head, f32), q_s[num_warps][head_dim];
// at head_dim 256 with 16 warps about 82 KB without staging and 213 KB with
// f32 staging, above the default 48 KB, so the launcher raises the limit (and
// loads element by element when the device cannot give that much).
//
// Workspace (cascade states), for T = num_tokens rows and H = num_heads:
//   max[t][h]    = ws + t * H + h
//   sum[t][h]    = ws + T * H + t * H + h
//   o[t][h][d]   = ws + 2 * T * H + (t * H + h) * head_dim + d   (unnormalised)
//
// Napkin math (SmolLM2, 9 heads / 3 KV heads, head_dim 64, a 512-token
// prefill): 5 rows per block, so each K/V tile is read from L2 once per 5
// rows instead of once per row; a first version, not a tuned one.
#include <algorithm>
#include <climits>

#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/kv_tile_loader.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/paged_prefill.cuh"

namespace kvscope::cuda {
namespace {

constexpr int32_t kMaxRowsPerBlock = 16;
constexpr int32_t kMaxWarps = 16;  // 512 threads; __launch_bounds__ keeps registers within it
constexpr size_t kDefaultSharedBytes = 48 * 1024;

// Warps of a block at least: the rows' warps do the attention; all of them
// load the K/V tiles, so a block of one decode row (group warps) still
// loads its tiles with 8 warps. Extra warps hold no row.
constexpr int32_t kMinWarps = 8;

struct PlanView {
  const int32_t* data;
  int32_t items_at, shared_at, rows_at, row_prefix_at, num_tokens, rows_per_block;
};

template <bool kVectorLoads>
__global__ void __launch_bounds__(kMaxWarps * kWarpSize)
    prefill_kernel(AttentionShape shape, PagedKvLayer kv, PagedPrefillBatch batch, PlanView plan, bool shared_pass,
                   const float* q, int64_t q_row_stride, float* out, float* ws) {
  extern __shared__ __align__(16) float smem[];
  __shared__ int32_t row_begin_s[kMaxRowsPerBlock];
  __shared__ int32_t row_stop_s[kMaxRowsPerBlock];
  __shared__ int64_t key_offsets_s[2 * kAttentionTile];
  const int32_t hd = shape.head_dim;
  const int32_t stride = tile_row_stride(hd);
  const size_t staging_bytes = kVectorLoads ? kv_staging_bytes(kv_bytes(kv.type, hd)) : 0;
  uint8_t* staging = reinterpret_cast<uint8_t*>(smem);    // [2][K, V][kAttentionTile][row bytes]
  float* k_s = smem + staging_bytes / sizeof(float);      // [kAttentionTile][hd + 1]
  float* v_s = k_s + kAttentionTile * stride;             // [kAttentionTile][hd + 1]
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  float* q_s = v_s + kAttentionTile * stride + warp * hd;  // this warp's [hd]

  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t kv_head = blockIdx.y;
  const int32_t r_local = warp / group;
  const int32_t h = kv_head * group + warp % group;
  const int32_t rows_per_block = plan.rows_per_block;  // warps past rows_per_block * group only load tiles
  // Flat item: (sequence, first, end); shared item: (table sequence, prefix_len, first, end).
  const int32_t* item = shared_pass ? plan.data + plan.shared_at + 4 * blockIdx.x
                                    : plan.data + plan.items_at + 3 * blockIdx.x;
  const int32_t first = shared_pass ? item[2] : item[1];
  const int32_t end = shared_pass ? item[3] : item[2];
  const bool active = r_local < end - first;
  const int32_t t = active ? plan.data[plan.rows_at + first + r_local] : 0;
  const int32_t* table = batch.block_ids + batch.block_table_start[item[0]];

  // The row's keys [begin, stop) and its starting state.
  int32_t begin = INT_MAX;
  int32_t stop = INT_MIN;
  const int64_t num_rows_heads = static_cast<int64_t>(plan.num_tokens) * shape.num_heads;
  const int64_t th = static_cast<int64_t>(t) * shape.num_heads + h;  // (row, head) index
  WarpState st;
  clear_state(st);
  if (active) {
    const int32_t pos = batch.positions[t];
    const int32_t prefix = shared_pass ? 0 : plan.data[plan.row_prefix_at + t];
    if (shared_pass) {
      begin = 0;
      stop = item[1];
    } else {
      begin = prefix > 0 ? prefix : (shape.sliding_window > 0 ? max(0, pos - shape.sliding_window + 1) : 0);
      stop = pos + 1;
    }
    if (prefix > 0) {  // continue from the shared pass's state at the prefix's end
      st.max = ws[th];
      st.sum = ws[num_rows_heads + th];
#pragma unroll
      for (int i = 0; i < kPrefillDimsPerLane; ++i) {
        const int32_t d = lane + kWarpSize * i;
        if (d < hd) st.o[i] = ws[2 * num_rows_heads + th * hd + d];
      }
    }
    // q[t][h][d] = q + t * q_row_stride + h * head_dim + d
    for (int32_t d = lane; d < hd; d += kWarpSize) q_s[d] = q[t * q_row_stride + static_cast<int64_t>(h) * hd + d];
  }
  if (warp % group == 0 && lane == 0) {
    row_begin_s[r_local] = begin;
    row_stop_s[r_local] = stop;
  }
  __syncthreads();
  int32_t block_begin = INT_MAX;
  int32_t block_stop = INT_MIN;
  for (int32_t r = 0; r < rows_per_block; ++r) {
    block_begin = min(block_begin, row_begin_s[r]);
    block_stop = max(block_stop, row_stop_s[r]);
  }
  // At least one row is active (items are never empty), so block_begin < block_stop.
  // Every position of [block_begin, block_stop) is attended by some row of the
  // block (a sequence's rows are consecutive positions, as a StepBatch's are,
  // so their windows leave no gap), hence stored: loading all of it is safe.
  const KvHeadView src = kv_head_view(kv, table, shape.num_kv_heads, kv_head, hd);
  const KvTileBuffers buf{k_s, v_s, staging, key_offsets_s};
  for_each_kv_tile<kVectorLoads>(src, buf, block_begin, block_stop, [&](int32_t tile) {
    const int32_t lo = max(begin, tile);
    const int32_t hi = min(stop, tile + kAttentionTile);
    if (lo < hi) attend_tile(st, q_s, k_s, v_s, tile, lo, hi, hd, shape.scale, shape.softcap);
  });
  if (!active) return;
  if (shared_pass) {
    if (lane == 0) {
      ws[th] = st.max;
      ws[num_rows_heads + th] = st.sum;
    }
#pragma unroll
    for (int i = 0; i < kPrefillDimsPerLane; ++i) {
      const int32_t d = lane + kWarpSize * i;
      if (d < hd) ws[2 * num_rows_heads + th * hd + d] = st.o[i];
    }
    return;
  }
  // out[t][h][d] = o[d] / sum, as the CPU's own_pass divides.
  const float inv = st.sum > 0.0f ? __fdiv_rn(1.0f, st.sum) : 0.0f;
#pragma unroll
  for (int i = 0; i < kPrefillDimsPerLane; ++i) {
    const int32_t d = lane + kWarpSize * i;
    if (d < hd) out[th * hd + d] = __fmul_rn(st.o[i], inv);
  }
}

}  // namespace

cudaError_t paged_prefill_attention(const AttentionShape& shape, const PagedKvLayer& kv,
                                    const PagedPrefillBatch& batch, const PrefillPlan& plan,
                                    const int32_t* plan_data, const float* q, float* out, float* workspace,
                                    size_t workspace_floats, cudaStream_t stream, int64_t q_row_stride) {
  const char* op = "paged_prefill_attention";
  const int64_t q_stride = q_row_stride > 0 ? q_row_stride : static_cast<int64_t>(shape.num_heads) * shape.head_dim;
  KVSCOPE_CUDA_REQUIRE(op, q_row_stride >= 0 && q_stride >= static_cast<int64_t>(shape.num_heads) * shape.head_dim);
  KVSCOPE_CUDA_REQUIRE(op, shape.num_heads > 0 && shape.num_kv_heads > 0);
  KVSCOPE_CUDA_REQUIRE(op, shape.num_heads % shape.num_kv_heads == 0);
  KVSCOPE_CUDA_REQUIRE(op, shape.num_kv_heads <= 65535);  // grid.y
  KVSCOPE_CUDA_REQUIRE(op, shape.head_dim > 0 && shape.head_dim <= kMaxPrefillHeadDim);
  KVSCOPE_CUDA_REQUIRE(op, shape.sliding_window >= 0);
  KVSCOPE_CUDA_REQUIRE(op, kv_type_fits_head_dim(kv.type, shape.head_dim));
  KVSCOPE_CUDA_REQUIRE(op, kv.block_size > 0);
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  // The plan was made for this shape: its blocks have rows_per_block * group <= 16 warps.
  KVSCOPE_CUDA_REQUIRE(op, plan.rows_per_block > 0 && plan.rows_per_block <= kMaxRowsPerBlock);
  KVSCOPE_CUDA_REQUIRE(op, static_cast<int64_t>(plan.rows_per_block) * group <= kMaxWarps);
  KVSCOPE_CUDA_REQUIRE(op, plan.num_items >= 0 && plan.num_shared_items >= 0);
  KVSCOPE_CUDA_REQUIRE(op, plan.row_prefix_at + static_cast<size_t>(plan.num_tokens) <= plan.data.size());
  if (plan.num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, q != nullptr && out != nullptr && plan_data != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, kv.k != nullptr && kv.v != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, batch.positions != nullptr && batch.block_table_start != nullptr &&
                               batch.block_ids != nullptr);
  const size_t ws_needed = paged_prefill_workspace_floats(plan, shape);
  KVSCOPE_CUDA_REQUIRE(op, workspace_floats >= ws_needed && (ws_needed == 0 || workspace != nullptr));

  const int32_t num_warps = std::max(plan.rows_per_block * group, std::min(kMinWarps, kMaxWarps / group * group));
  const size_t float_bytes =
      (2 * static_cast<size_t>(kAttentionTile) * tile_row_stride(shape.head_dim) +
       static_cast<size_t>(num_warps) * shape.head_dim) * sizeof(float);
  // 16-byte copies when the rows allow them and the device has the shared
  // memory for the staging buffer; else element loads (same values, same bits).
  bool vector_loads = kv_rows_copy_aligned(kv, shape.head_dim);
  const size_t vector_smem = float_bytes + kv_staging_bytes(static_cast<int64_t>(kv_row_bytes(kv.type, shape.head_dim)));
  if (vector_loads && vector_smem > kDefaultSharedBytes) {
    int device = 0, max_optin = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    if (cudaError_t e = cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
        e != cudaSuccess) {
      return e;
    }
    vector_loads = vector_smem <= static_cast<size_t>(max_optin);
  }
  const size_t smem = vector_loads ? vector_smem : float_bytes;
  const auto kernel = vector_loads ? prefill_kernel<true> : prefill_kernel<false>;
  if (smem > kDefaultSharedBytes) {
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(smem));
        e != cudaSuccess) {
      return e;
    }
  }
  const PlanView view{plan_data,     plan.items_at,   plan.shared_at,     plan.rows_at,
                      plan.row_prefix_at, plan.num_tokens, plan.rows_per_block};
  const unsigned int threads = static_cast<unsigned int>(num_warps * kWarpSize);
  if (plan.num_shared_items > 0) {  // the cascade prefixes first: the flat pass continues their states
    const dim3 grid(static_cast<unsigned int>(plan.num_shared_items), static_cast<unsigned int>(shape.num_kv_heads));
    kernel<<<grid, threads, smem, stream>>>(shape, kv, batch, view, true, q, q_stride, out, workspace);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  const dim3 grid(static_cast<unsigned int>(plan.num_items), static_cast<unsigned int>(shape.num_kv_heads));
  kernel<<<grid, threads, smem, stream>>>(shape, kv, batch, view, false, q, q_stride, out, workspace);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
