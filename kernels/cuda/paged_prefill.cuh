// Paged attention for mixed prefill / decode batches on the GPU, with the
// cascade shared-prefix pass (docs/cascade.md) and split-KV for decode rows.
// Same shapes and cache view as the CPU kernel (kernels/cpu/paged_attention.h):
// causal, GQA, sliding window, softcap, every KV cache type.
//
// The canonical order (the bitwise contract). A row's keys are cut at
// fixed absolute positions (the partition boundaries below); within a
// partition, tiles of kAttentionTile absolute positions are folded in
// position order from a clear state (attention_tile.cuh's attend_tile); the
// partition states are then merged in partition order with merge_state (one
// formula everywhere). A row's bits therefore depend only on its position, q
// and the K/V values: not on block size, chunked vs whole prefill, cascade,
// the other rows of the batch, or which of the paths below ran it. (A row
// whose keys lie in one partition gets the plain tile fold.)
//
// Work is planned once per step on the host (plan_paged_prefill, FlashInfer's
// "plan" step) from the StepBatch's host arrays and used by every layer:
//   - flat items: a few rows of one sequence for one KV head, one warp per
//     (row, query head), each K/V tile loaded into shared memory once for all
//     of them; a warp keeps the merged state of its finished partitions and
//     the running state of the current one;
//   - partition items (split-KV): a sequence with one query row and no
//     cascade prefix (a decode row) is cut into its partitions, one block per
//     (partition, KV head), so a long context is walked by many blocks at
//     once; each writes its partition's state to the workspace (or, when the
//     row has a single partition, its output), and a combine launch merges a
//     row's partition states in order into its output;
//   - cascade: for each group of sequences sharing the physical blocks of
//     positions [0, prefix_len), a shared pass attends all the group's rows to
//     the prefix, loading each prefix tile once per block of rows from any
//     member, and stores each (row, head) state pair (merged finished
//     partitions, current partition) in the workspace; the flat pass continues
//     each of those rows from that pair at prefix_len over the sequence's own
//     blocks, so cascade on and off fold the same tiles in the same order.
//     Groups are ignored when sliding_window > 0 (the prefix is then not
//     visible to every row), as on the CPU.
//
// Tests: tests/kernels/cuda/paged_prefill_test.cpp (with the decode rows'
// split vs the flat path, bitwise), cascade_attention_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/paged_attention.h"

namespace kvscope::cuda {

// The partitions of the canonical order above, part of the bitwise contract
// (changing them changes the bits of every row that crosses a boundary):
// kAttentionPartitionShort = 64 keys (2 tiles) below position
// kAttentionPartitionSwitch = 1024, kAttentionPartition = 256 (8 tiles) from
// there on. Boundaries are fixed absolute positions either way, so a row's
// bits still depend on its position alone.
//   - Short partitions for short contexts: a chat's decode row at ~150
//     positions is then 3 partitions, 9 blocks for SmolLM2's 3 KV heads,
//     each walking 2 tiles, instead of 3 blocks walking 5 (16.7 us per layer
//     on the H200 with one 256-key partition, most of it the tiles' chain of
//     load and attend).
//   - Long partitions for long contexts: a row at 16k positions is walked by
//     16 + 60 = 76 partitions x 3 = 228 blocks, more than an H200's 132 SMs,
//     each folding 8 tiles behind one pipeline fill, and its combine merges
//     76 states, not 256. A prefill row pays one extra merge per partition.
inline constexpr int32_t kAttentionPartition = 256;
inline constexpr int32_t kAttentionPartitionShort = 64;
inline constexpr int32_t kAttentionPartitionSwitch = 1024;
static_assert(kAttentionPartition % kAttentionTile == 0, "partitions are whole tiles");
static_assert(kAttentionPartitionShort % kAttentionTile == 0, "partitions are whole tiles");
static_assert(kAttentionPartitionSwitch % kAttentionPartition == 0 &&
                  kAttentionPartitionSwitch % kAttentionPartitionShort == 0,
              "the two sizes' boundaries meet at the switch");

// Whether absolute position p starts a partition (p a multiple of kAttentionTile).
__host__ __device__ inline bool starts_partition(int32_t p) {
  return p % (p < kAttentionPartitionSwitch ? kAttentionPartitionShort : kAttentionPartition) == 0;
}

// The first position of the partition holding position p.
__host__ __device__ inline int32_t partition_start(int32_t p) {
  const int32_t size = p < kAttentionPartitionSwitch ? kAttentionPartitionShort : kAttentionPartition;
  return p - p % size;
}

// The first position after the partition holding position p.
__host__ __device__ inline int32_t partition_end(int32_t p) {
  return partition_start(p) + (p < kAttentionPartitionSwitch ? kAttentionPartitionShort : kAttentionPartition);
}

// One step's work, host side. All arrays are packed into `data` (upload it
// once per step; the launcher reads the device copy):
//   items[i][3]           = data[items_at + 3 i ..]:     sequence, first, end (into rows), flat pass
//   shared_items[i][4]    = data[shared_at + 4 i ..]:    table sequence, prefix_len, first, end (into rows)
//   rows[k]               = data[rows_at + k]:           query rows; an item's rows are rows[first, end)
//   row_prefix[t]         = data[row_prefix_at + t]:     prefix_len of row t's cascade group, 0 if none
//   partition_items[i][5] = data[partition_at + 5 i ..]: sequence, row t, keys [begin, end) (one
//                                                        partition's), writes_out (1: the row's only
//                                                        partition writes out[t]; 0: it writes state i)
//   combine_rows[i][3]    = data[combine_at + 3 i ..]:   row t, first partition item, partition count
// The launches depend on these plain fields and the shape only (so a caller
// may key captured CUDA graphs on them): grids (num_shared_items, KV heads),
// (num_items, KV heads), (num_partition_items, KV heads) and
// ceil(num_combine_rows * num_heads / 4); block sizes from rows_per_block and
// the heads; shared memory from head_dim, the heads and the KV cache type
// (and whether the pools are 16-byte aligned, a property of the pool).
struct PrefillPlan {
  int32_t num_tokens = 0;
  int32_t rows_per_block = 0;  // rows of one flat / shared block; warps = rows_per_block * query heads per KV head
  int32_t num_items = 0;            // flat pass blocks per KV head
  int32_t num_shared_items = 0;     // cascade shared pass blocks per KV head
  int32_t num_partition_items = 0;  // split-KV blocks per KV head (decode rows' partitions)
  int32_t num_combine_rows = 0;     // decode rows with more than one partition
  int32_t items_at = 0, shared_at = 0, rows_at = 0, row_prefix_at = 0, partition_at = 0, combine_at = 0;
  std::vector<int32_t> data;
};

// The device arrays of the batch (PagedAttentionBatch's fields, on the device).
struct PagedPrefillBatch {
  int32_t num_seqs = 0;
  const int32_t* query_start = nullptr;        // [num_seqs + 1] rows of q/out per sequence
  const int32_t* positions = nullptr;          // [num_tokens] absolute position of each row
  const int32_t* block_table_start = nullptr;  // [num_seqs + 1] offsets into block_ids
  const int32_t* block_ids = nullptr;          // [sum of table lengths] physical block ids
};

// Plans the step from the HOST copies of the batch and cascade groups (the
// shape's sliding_window decides a decode row's partitions; cost: a few
// integers per row and per decode row's partition). Refuses
// (cudaErrorInvalidValue, message on stderr) what the CPU kernel asserts:
// shapes that do not divide, more than 16 query heads per KV head, a cascade
// prefix that is not a positive multiple of kAttentionTile, or a group row
// before its prefix's end; a sequence in two groups.
cudaError_t plan_paged_prefill(const AttentionShape& shape, const PagedAttentionBatch& host_batch,
                               const CascadeGroups& host_cascade, PrefillPlan* plan);

// Floats of workspace the plan needs: with cascade, per (row, head) two
// states (merged finished partitions and the current one: max, sum,
// head_dim outputs each); per (partition item, head) one state.
size_t paged_prefill_workspace_floats(const PrefillPlan& plan, const AttentionShape& shape);

// out[t] = softmax(scale * q[t] . K) V over the keys at positions
// [max(0, pos - window + 1), pos] of t's sequence (softcap on the scaled
// scores when > 0). K/V of every attended position, this step's included,
// must be stored. q: device f32, token t's head h at q + t * q_row_stride +
// h * head_dim (q_row_stride 0: num_heads * head_dim, packed; larger when q
// shares its rows with k and v); out: [num_tokens][num_heads * head_dim] device f32;
// plan_data: the device copy of plan.data; workspace as sized above (may be
// null when that is 0). Preconditions: the plan's shape, 0 < head_dim <=
// kMaxPrefillHeadDim (256), the cache type fits head_dim, kv.block_size > 0.
cudaError_t paged_prefill_attention(const AttentionShape& shape, const PagedKvLayer& kv,
                                    const PagedPrefillBatch& batch, const PrefillPlan& plan,
                                    const int32_t* plan_data, const float* q, float* out, float* workspace,
                                    size_t workspace_floats, cudaStream_t stream, int64_t q_row_stride = 0);

}  // namespace kvscope::cuda
