// Paged prefill / mixed-batch attention: the cascade shared pass, the flat
// pass, the decode rows' partition (split-KV) pass and their combine; see
// paged_prefill.cuh for the canonical order they all follow. One kernel runs
// the first three (so the tile arithmetic is literally the same code): grid
// (plan item, KV head), block of rows * group warps (at least kMinWarps, the
// rest only loading tiles); warp w runs the item's row w / group for query
// head kv_head * group + w % group. A flat or shared item has up to
// rows_per_block rows of one sequence; a partition item one row and the keys
// of one of its partitions.
//
// Shared memory: with 16-byte copies (kv_tile_loader.cuh) first the staging
// buffer [2][K, V][32][row bytes], then k_s[32][head_dim + 1],
// v_s[32][head_dim + 1] (one tile of the KV head, f32), q_s[num_warps][head_dim];
// at head_dim 256 with 16 warps about 82 KB without staging and 213 KB with
// f32 staging, above the default 48 KB, so the launcher raises the limit (and
// loads element by element when the device cannot give that much).
//
// Workspace, for T = num_tokens rows, H = num_heads, K = num_partition_items,
// each state (max, sum, o[head_dim] unnormalised) stored as a StateArray:
//   cascade (only with shared items): the merged finished partitions of
//   (t, h) at index t * H + h of the array at ws, the current partition's in
//   the array after it; then the partition states, index k * H + h.
//
// Napkin math (SmolLM2, 9 heads / 3 KV heads, head_dim 64, f32 cache): a
// decode row at 16k positions has 76 partitions (16 of 64 positions below
// 1024, 60 of 256 above), 228 blocks; a tile is 16 KB of K and V, in flight
// while the block attends the tile before, so 4 blocks per SM keep ~64 KB in
// flight per SM, above the ~36 KB that 4.8 TB/s times ~1 us of latency needs
// over 132 SMs. Measured on the H200 (docs/cuda.md): 43% of the copy
// bandwidth at 64 sequences x 16k, 9.8% for one sequence, where the blocks
// are latency bound (11% achieved occupancy in a chat-length decode row's
// launch). A prefill block of 5 rows reads each K/V tile once for 5 rows.
#include <algorithm>
#include <climits>

#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/kv_tile_loader.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/paged_prefill.cuh"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int32_t kMaxRowsPerBlock = 16;
// 512 threads at most. __launch_bounds__(512, 2) holds a thread to 64
// registers (a few bytes spill), so an SM holds two full blocks, or four
// 8-warp partition blocks (which need ~50 KB of shared memory each at
// SmolLM2's shapes): without the 2, ptxas took 104 and one block per SM.
constexpr int32_t kMaxWarps = 16;
constexpr size_t kDefaultSharedBytes = 48 * 1024;
constexpr int kCombineWarps = 4;  // warps of a combine block, one (row, head) each

// Warps of a block at least: the rows' warps do the attention; all of them
// load the K/V tiles, so a block of one decode row (group warps) still
// loads its tiles with 8 warps. Extra warps hold no row.
constexpr int32_t kMinWarps = 8;

int32_t warps_for_rows(int32_t rows, int32_t group) {
  return std::max(rows * group, std::min(kMinWarps, kMaxWarps / group * group));
}

enum class Pass : int32_t {
  Shared,     // a cascade group's rows over its prefix; states to the workspace
  Flat,       // a sequence's rows over their own keys (from the prefix state with cascade); output
  Partition,  // a decode row over one partition's keys; its state, or output when it is the only one
};

struct PlanView {
  const int32_t* data;
  int32_t items_at, shared_at, rows_at, row_prefix_at, partition_at, combine_at, num_tokens;
  int32_t num_partition_items;
  int64_t partition_states_at;  // floats of the workspace before the partition states
};

// States in the workspace: state i's max at max[i], sum at sum[i], o at o[i * head_dim ..].
struct StateArray {
  float* max;
  float* sum;
  float* o;
};

// An array of `count` states starting at `at` (count * (2 + head_dim) floats).
__device__ inline StateArray state_array(float* at, int64_t count) { return {at, at + count, at + 2 * count}; }

__device__ inline void store_state(const WarpState& st, const StateArray& a, int64_t i, int32_t head_dim) {
  const int lane = threadIdx.x % kWarpSize;
  if (lane == 0) {
    a.max[i] = st.max;
    a.sum[i] = st.sum;
  }
#pragma unroll
  for (int k = 0; k < kPrefillDimsPerLane; ++k) {
    const int32_t d = lane + kWarpSize * k;
    if (d < head_dim) a.o[i * head_dim + d] = st.o[k];
  }
}

__device__ inline void load_state(WarpState& st, const StateArray& a, int64_t i, int32_t head_dim) {
  const int lane = threadIdx.x % kWarpSize;
  st.max = a.max[i];
  st.sum = a.sum[i];
#pragma unroll
  for (int k = 0; k < kPrefillDimsPerLane; ++k) {
    const int32_t d = lane + kWarpSize * k;
    st.o[k] = d < head_dim ? a.o[i * head_dim + d] : 0.0f;
  }
}

template <bool kVectorLoads>
__global__ void __launch_bounds__(kMaxWarps * kWarpSize, 2)
    prefill_kernel(AttentionShape shape, PagedKvLayer kv, PagedPrefillBatch batch, PlanView plan, Pass pass,
                   int32_t rows_per_block, const float* q, int64_t q_row_stride, float* out, float* ws) {
  wait_for_previous_kernel();  // a long kernel: the next one starts as it exits
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
  // Shared item: (table sequence, prefix_len, first, end); flat item: (sequence, first, end), rows
  // rows[first, end); partition item: (sequence, row, key begin, key end, writes_out).
  const int32_t* item = pass == Pass::Shared ? plan.data + plan.shared_at + 4 * blockIdx.x
                        : pass == Pass::Flat ? plan.data + plan.items_at + 3 * blockIdx.x
                                             : plan.data + plan.partition_at + 5 * blockIdx.x;
  int32_t num_rows = 1;
  int32_t t = item[1];
  if (pass != Pass::Partition) {
    const int32_t first = pass == Pass::Shared ? item[2] : item[1];
    num_rows = (pass == Pass::Shared ? item[3] : item[2]) - first;
    t = r_local < num_rows ? plan.data[plan.rows_at + first + r_local] : 0;
  }
  const bool active = r_local < num_rows;  // warps past the item's rows only load tiles
  const int32_t* table = batch.block_ids + batch.block_table_start[item[0]];

  // The row's keys [begin, stop) and its starting states: acc merges the
  // finished partitions, st folds the current one (attention_tile.cuh).
  int32_t begin = INT_MAX;
  int32_t stop = INT_MIN;
  const int64_t num_rows_heads = static_cast<int64_t>(plan.num_tokens) * shape.num_heads;
  const int64_t th = static_cast<int64_t>(t) * shape.num_heads + h;  // (row, head) index
  // The cascade states at the prefix's end: which 0 the merged finished partitions, 1 the current one.
  const auto prefix_states = [&](int which) {
    return state_array(ws + which * num_rows_heads * (2 + hd), num_rows_heads);
  };
  WarpState acc, st;
  clear_state(acc);
  clear_state(st);
  if (active) {
    const int32_t pos = batch.positions[t];
    if (pass == Pass::Shared) {
      begin = 0;
      stop = item[1];
    } else if (pass == Pass::Partition) {
      begin = item[2];
      stop = item[3];
    } else {
      const int32_t prefix = plan.data[plan.row_prefix_at + t];
      begin = prefix > 0 ? prefix : (shape.sliding_window > 0 ? max(0, pos - shape.sliding_window + 1) : 0);
      stop = pos + 1;
      if (prefix > 0) {  // continue from the shared pass's states at the prefix's end
        load_state(acc, prefix_states(0), th, hd);
        load_state(st, prefix_states(1), th, hd);
      }
    }
    // q[t][h][d] = q + t * q_row_stride + h * head_dim + d
    for (int32_t d = lane; d < hd; d += kWarpSize) q_s[d] = q[t * q_row_stride + static_cast<int64_t>(h) * hd + d];
  }
  if (warp % group == 0 && lane == 0 && r_local < kMaxRowsPerBlock) {
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
    // A partition starts: fold the finished one into acc (a no-op while st
    // is empty, as it is before the row's first key and in a partition item).
    if (starts_partition(tile)) {
      merge_state(acc, st);
      clear_state(st);
    }
    const int32_t lo = max(begin, tile);
    const int32_t hi = min(stop, tile + kAttentionTile);
    if (lo < hi) attend_tile(st, q_s, k_s, v_s, tile, lo, hi, hd, shape.scale, shape.softcap);
  });
  if (!active) return;
  if (pass == Pass::Shared) {  // both states: the flat pass goes on folding the current partition
    store_state(acc, prefix_states(0), th, hd);
    store_state(st, prefix_states(1), th, hd);
    return;
  }
  merge_state(acc, st);
  if (pass == Pass::Partition && item[4] == 0) {  // one of several partitions: the combine merges them
    const StateArray parts = state_array(ws + plan.partition_states_at,
                                         static_cast<int64_t>(plan.num_partition_items) * shape.num_heads);
    store_state(acc, parts, static_cast<int64_t>(blockIdx.x) * shape.num_heads + h, hd);
    return;
  }
  write_output(acc, out + th * hd, hd);  // out[t][h][d] = out + (t * H + h) * head_dim + d
}

// A split row's output: its partition states merged in partition order from
// a clear state, as the flat pass merges them. One warp per (combine row, head).
__global__ void combine_kernel(AttentionShape shape, PlanView plan, int32_t num_combine_rows, float* out,
                               float* ws) {
  await_previous_kernel();
  const int64_t w = static_cast<int64_t>(blockIdx.x) * kCombineWarps + threadIdx.x / kWarpSize;
  if (w >= static_cast<int64_t>(num_combine_rows) * shape.num_heads) return;  // no barriers below
  const int32_t r = static_cast<int32_t>(w / shape.num_heads);
  const int32_t h = static_cast<int32_t>(w % shape.num_heads);
  const int32_t* row = plan.data + plan.combine_at + 3 * r;  // (row t, first partition item, count)
  const int32_t t = row[0];
  const StateArray parts = state_array(ws + plan.partition_states_at,
                                       static_cast<int64_t>(plan.num_partition_items) * shape.num_heads);
  WarpState acc, part;
  clear_state(acc);
  for (int32_t k = row[1]; k < row[1] + row[2]; ++k) {
    load_state(part, parts, static_cast<int64_t>(k) * shape.num_heads + h, shape.head_dim);
    merge_state(acc, part);
  }
  write_output(acc, out + (static_cast<int64_t>(t) * shape.num_heads + h) * shape.head_dim, shape.head_dim);
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
  KVSCOPE_CUDA_REQUIRE(op, plan.num_partition_items >= 0 && plan.num_combine_rows >= 0);
  KVSCOPE_CUDA_REQUIRE(op, plan.row_prefix_at + static_cast<size_t>(plan.num_tokens) <= plan.data.size());
  KVSCOPE_CUDA_REQUIRE(op, plan.combine_at + 3 * static_cast<size_t>(plan.num_combine_rows) <= plan.data.size());
  if (plan.num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, q != nullptr && out != nullptr && plan_data != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, kv.k != nullptr && kv.v != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, batch.positions != nullptr && batch.block_table_start != nullptr &&
                               batch.block_ids != nullptr);
  const size_t ws_needed = paged_prefill_workspace_floats(plan, shape);
  KVSCOPE_CUDA_REQUIRE(op, workspace_floats >= ws_needed && (ws_needed == 0 || workspace != nullptr));

  // Flat and shared blocks hold rows_per_block rows; partition blocks one.
  const int32_t rows_warps = warps_for_rows(plan.rows_per_block, group);
  const int32_t partition_warps = warps_for_rows(1, group);
  const auto smem_floats_bytes = [&](int32_t num_warps) {
    return (2 * static_cast<size_t>(kAttentionTile) * tile_row_stride(shape.head_dim) +
            static_cast<size_t>(num_warps) * shape.head_dim) * sizeof(float);
  };
  // 16-byte copies when the rows allow them and the device has the shared
  // memory for the staging buffer; else element loads (same values, same bits).
  const size_t staging = kv_staging_bytes(static_cast<int64_t>(kv_row_bytes(kv.type, shape.head_dim)));
  const size_t largest = smem_floats_bytes(std::max(rows_warps, partition_warps));
  bool vector_loads = kv_rows_copy_aligned(kv, shape.head_dim);
  if (vector_loads && largest + staging > kDefaultSharedBytes) {
    int device = 0, max_optin = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    if (cudaError_t e = cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
        e != cudaSuccess) {
      return e;
    }
    vector_loads = largest + staging <= static_cast<size_t>(max_optin);
  }
  const size_t staging_smem = vector_loads ? staging : 0;
  const auto kernel = vector_loads ? prefill_kernel<true> : prefill_kernel<false>;
  if (largest + staging_smem > kDefaultSharedBytes) {
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(largest + staging_smem));
        e != cudaSuccess) {
      return e;
    }
  }
  const size_t cascade_floats = plan.num_shared_items > 0 ? 2 * static_cast<size_t>(plan.num_tokens) *
                                                                shape.num_heads * (2 + static_cast<size_t>(shape.head_dim))
                                                          : 0;
  const PlanView view{plan_data,          plan.items_at,       plan.shared_at,
                      plan.rows_at,       plan.row_prefix_at,  plan.partition_at,
                      plan.combine_at,    plan.num_tokens,     plan.num_partition_items,
                      static_cast<int64_t>(cascade_floats)};
  const auto launch = [&](Pass pass, int32_t num_blocks, int32_t rows, int32_t num_warps) {
    const dim3 grid(static_cast<unsigned int>(num_blocks), static_cast<unsigned int>(shape.num_kv_heads));
    const size_t smem = staging_smem + smem_floats_bytes(num_warps);
    launch_kernel(kernel, grid, static_cast<unsigned int>(num_warps * kWarpSize), smem, stream, shape, kv, batch, view,
                  pass, rows, q, q_stride, out, workspace);
    return cudaGetLastError();
  };
  if (plan.num_shared_items > 0) {  // the cascade prefixes first: the flat pass continues their states
    if (cudaError_t e = launch(Pass::Shared, plan.num_shared_items, plan.rows_per_block, rows_warps);
        e != cudaSuccess) {
      return e;
    }
  }
  if (plan.num_items > 0) {
    if (cudaError_t e = launch(Pass::Flat, plan.num_items, plan.rows_per_block, rows_warps); e != cudaSuccess) {
      return e;
    }
  }
  if (plan.num_partition_items > 0) {
    if (cudaError_t e = launch(Pass::Partition, plan.num_partition_items, 1, partition_warps); e != cudaSuccess) {
      return e;
    }
  }
  if (plan.num_combine_rows > 0) {  // after the partition pass, on the same stream
    const int64_t warps = static_cast<int64_t>(plan.num_combine_rows) * shape.num_heads;
    launch_kernel(combine_kernel, num_blocks_for(warps, kCombineWarps), kCombineWarps * kWarpSize, 0, stream, shape,
                  view, plan.num_combine_rows, out, workspace);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

}  // namespace kvscope::cuda
