// Paged decode attention kernels; see paged_attention.cuh.
//
// Partition kernel: grid (partition p, query head h, sequence s), 128
// threads. It loads q[s][h] into shared memory, computes the partition's
// scores (one warp per key, lanes over head_dim, a fixed shuffle tree), turns
// them into weights exp(score - max), and writes the unnormalised output
// o[d] = sum_j w_j V[j][d] (thread d walks the keys in position order) with
// the state (max, sum). Combine kernel: grid (h, s), one thread per d.
//
// Workspace, for R = num_seqs * num_heads rows and P_max partitions:
//   part_max[r][p] = ws + r * P_max + p
//   part_sum[r][p] = ws + R * P_max + r * P_max + p
//   part_out[r][p][d] = ws + 2 * R * P_max + (r * P_max + p) * head_dim + d,   r = s * num_heads + h.
//
// Napkin math for SmolLM2 decode (9 heads, 3 KV heads, head_dim 64, f16 KV,
// 4k context): K+V are 3 heads * 64 * 2 B * 2 = 768 B per position, 3 MB per
// layer at 4k; each KV row is read by 3 query heads, through L2. Fine for a
// first version; a KV-head-per-block variant would read K/V once.
#include "kernels/cuda/paged_attention.cuh"

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 128;

// The visible key positions of a query at `pos`, and the partitions holding them.
struct VisibleRange {
  int32_t first;       // first visible position
  int32_t first_part;  // partition of `first`
  int32_t last_part;   // partition of pos
};

__device__ inline VisibleRange visible_range(int32_t pos, int32_t sliding_window, int32_t partition_size) {
  VisibleRange r;
  r.first = sliding_window > 0 ? max(0, pos - sliding_window + 1) : 0;
  r.first_part = r.first / partition_size;
  r.last_part = pos / partition_size;
  return r;
}

// The bytes of position p's row for KV head kv_head in a pool of slots
// slot_bytes apart, found through the sequence's block table.
__device__ inline const uint8_t* kv_head_row(const void* pool, const int32_t* table, int32_t block_size,
                                             int32_t p, int64_t slot_bytes, int64_t head_bytes) {
  const int64_t slot = static_cast<int64_t>(table[p / block_size]) * block_size + p % block_size;
  return static_cast<const uint8_t*>(pool) + slot * slot_bytes + head_bytes;
}

__global__ void partition_kernel(AttentionShape shape, PagedKvLayer kv, PagedDecodeBatch batch, const float* q,
                                 int32_t partition_size, int32_t max_parts, float* workspace) {
  wait_for_previous_kernel();  // a long kernel: the next one starts as it exits
  extern __shared__ float smem[];
  float* q_s = smem;                          // [head_dim]
  float* w_s = smem + shape.head_dim;         // [partition_size] scores, then weights
  __shared__ float scratch[32];

  const int32_t p = blockIdx.x;
  const int32_t h = blockIdx.y;
  const int32_t s = blockIdx.z;
  const int32_t pos = batch.positions[s];
  const VisibleRange range = visible_range(pos, shape.sliding_window, partition_size);
  // Outside the visible partitions (or beyond the grid: the combine writes NaN) nothing is written.
  if (p < range.first_part || p > range.last_part) return;
  const int32_t lo = max(p * partition_size, range.first);
  const int32_t hi = min((p + 1) * partition_size, pos + 1);  // keys [lo, hi), hi - lo >= 1
  const int32_t n = hi - lo;

  const int32_t hd = shape.head_dim;
  const int32_t kv_head = h / (shape.num_heads / shape.num_kv_heads);
  const int64_t slot_bytes = kv_bytes(kv.type, static_cast<int64_t>(shape.num_kv_heads) * hd);
  const int64_t head_bytes = kv_bytes(kv.type, static_cast<int64_t>(kv_head) * hd);
  const int32_t* table = batch.block_ids + batch.block_table_start[s];

  // q[s][h][d] = q + (s * num_heads + h) * head_dim + d
  const float* q_row = q + (static_cast<int64_t>(s) * shape.num_heads + h) * hd;
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) q_s[d] = q_row[d];
  __syncthreads();

  // Scores: warp w takes keys j = w, w + 4, ...; lanes split head_dim.
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  for (int32_t j = warp; j < n; j += num_warps) {
    const uint8_t* k_row = kv_head_row(kv.k, table, kv.block_size, lo + j, slot_bytes, head_bytes);
    float dot = 0.0f;
    for (int32_t d = lane; d < hd; d += kWarpSize) dot += q_s[d] * load_kv_element(kv.type, k_row, d);
    dot = warp_sum(dot);
    float score = dot * shape.scale;
    if (shape.softcap > 0.0f) score = shape.softcap * tanhf(score / shape.softcap);
    if (lane == 0) w_s[j] = score;
  }
  __syncthreads();

  // Softmax weights of this partition: max, then exp(score - max) and their sum.
  float local_max = -INFINITY;
  for (int32_t j = threadIdx.x; j < n; j += blockDim.x) local_max = fmaxf(local_max, w_s[j]);
  const float part_max = block_max(local_max, scratch);
  float local_sum = 0.0f;
  for (int32_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float w = expf(w_s[j] - part_max);
    w_s[j] = w;
    local_sum += w;
  }
  const float part_sum = block_sum(local_sum, scratch);  // its barriers also publish w_s

  const int64_t num_rows = static_cast<int64_t>(gridDim.z) * shape.num_heads;
  const int64_t r = static_cast<int64_t>(s) * shape.num_heads + h;
  float* part_out = workspace + 2 * num_rows * max_parts + (r * max_parts + p) * hd;
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.0f;
    for (int32_t j = 0; j < n; ++j) {
      acc += w_s[j] * load_kv_element(kv.type, kv_head_row(kv.v, table, kv.block_size, lo + j, slot_bytes, head_bytes), d);
    }
    part_out[d] = acc;
  }
  if (threadIdx.x == 0) {
    workspace[r * max_parts + p] = part_max;
    workspace[num_rows * max_parts + r * max_parts + p] = part_sum;
  }
}

__global__ void combine_kernel(AttentionShape shape, PagedDecodeBatch batch, int32_t partition_size,
                               int32_t max_parts, const float* workspace, float* out) {
  await_previous_kernel();
  const int32_t h = blockIdx.x;
  const int32_t s = blockIdx.y;
  const int32_t hd = shape.head_dim;
  const int64_t num_rows = static_cast<int64_t>(gridDim.y) * shape.num_heads;
  const int64_t r = static_cast<int64_t>(s) * shape.num_heads + h;
  float* out_row = out + r * hd;  // out[s][h][d] = out + (s * num_heads + h) * head_dim + d
  const VisibleRange range = visible_range(batch.positions[s], shape.sliding_window, partition_size);
  if (range.last_part >= max_parts) {  // position beyond max_context: its partitions never ran
    for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) out_row[d] = NAN;
    return;
  }
  const float* part_max = workspace + r * max_parts;
  const float* part_sum = workspace + num_rows * max_parts + r * max_parts;
  const float* part_out = workspace + 2 * num_rows * max_parts + r * max_parts * hd;
  // Every thread folds the same states in partition order (a handful of
  // partitions), so all threads agree on M and S bit for bit.
  float m = -INFINITY;
  for (int32_t p = range.first_part; p <= range.last_part; ++p) m = fmaxf(m, part_max[p]);
  float total = 0.0f;
  for (int32_t p = range.first_part; p <= range.last_part; ++p) total += part_sum[p] * expf(part_max[p] - m);
  const float inv_total = 1.0f / total;
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.0f;
    for (int32_t p = range.first_part; p <= range.last_part; ++p) {
      acc += part_out[static_cast<int64_t>(p) * hd + d] * expf(part_max[p] - m);
    }
    out_row[d] = acc * inv_total;
  }
}

int32_t num_partitions(int32_t max_context, int32_t partition_size) {
  return (max_context + partition_size - 1) / partition_size;
}

}  // namespace

size_t paged_decode_workspace_floats(int32_t num_seqs, int32_t num_heads, int32_t head_dim, int32_t max_context,
                                     int32_t partition_size) {
  if (num_seqs <= 0 || num_heads <= 0 || head_dim <= 0 || max_context <= 0 || partition_size <= 0) return 0;
  const size_t rows_parts = static_cast<size_t>(num_seqs) * num_heads * num_partitions(max_context, partition_size);
  return rows_parts * (2 + static_cast<size_t>(head_dim));
}

cudaError_t paged_decode_attention(const AttentionShape& shape, const PagedKvLayer& kv, const PagedDecodeBatch& batch,
                                   const float* q, float* out, int32_t partition_size, float* workspace,
                                   size_t workspace_floats, cudaStream_t stream) {
  const char* op = "paged_decode_attention";
  KVSCOPE_CUDA_REQUIRE(op, shape.num_heads > 0 && shape.num_kv_heads > 0);
  KVSCOPE_CUDA_REQUIRE(op, shape.num_heads % shape.num_kv_heads == 0);
  KVSCOPE_CUDA_REQUIRE(op, shape.num_heads <= 65535);  // grid.y / grid.x limits
  KVSCOPE_CUDA_REQUIRE(op, shape.head_dim > 0 && shape.head_dim <= kMaxDecodeHeadDim);
  KVSCOPE_CUDA_REQUIRE(op, shape.sliding_window >= 0);
  KVSCOPE_CUDA_REQUIRE(op, kv_type_fits_head_dim(kv.type, shape.head_dim));
  KVSCOPE_CUDA_REQUIRE(op, kv.block_size > 0);
  KVSCOPE_CUDA_REQUIRE(op, partition_size > 0 && partition_size % kAttentionTile == 0);
  KVSCOPE_CUDA_REQUIRE(op, partition_size <= kMaxDecodePartitionSize);
  KVSCOPE_CUDA_REQUIRE(op, batch.num_seqs >= 0 && batch.num_seqs <= 65535);  // grid.z / grid.y limits
  KVSCOPE_CUDA_REQUIRE(op, batch.max_context > 0);
  if (batch.num_seqs == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, q != nullptr && out != nullptr && workspace != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, kv.k != nullptr && kv.v != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, batch.positions != nullptr && batch.block_table_start != nullptr &&
                               batch.block_ids != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, workspace_floats >= paged_decode_workspace_floats(batch.num_seqs, shape.num_heads,
                                                                             shape.head_dim, batch.max_context,
                                                                             partition_size));
  const int32_t max_parts = num_partitions(batch.max_context, partition_size);
  const size_t smem = (static_cast<size_t>(shape.head_dim) + partition_size) * sizeof(float);  // <= 34 KB
  const dim3 part_grid(static_cast<unsigned int>(max_parts), static_cast<unsigned int>(shape.num_heads),
                       static_cast<unsigned int>(batch.num_seqs));
  launch_kernel(partition_kernel, part_grid, kThreads, smem, stream, shape, kv, batch, q, partition_size, max_parts,
                workspace);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  const dim3 combine_grid(static_cast<unsigned int>(shape.num_heads), static_cast<unsigned int>(batch.num_seqs));
  launch_kernel(combine_kernel, combine_grid, kThreads, 0, stream, shape, batch, partition_size, max_parts, workspace,
                out);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
