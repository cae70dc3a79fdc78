// Paged attention for mixed prefill / decode batches on the GPU, with the
// cascade shared-prefix pass (docs/cascade.md). Same shapes, cache view and
// invariance contract as the CPU kernel (kernels/cpu/paged_attention.h):
// causal, GQA, sliding window, softcap, every KV cache type; keys are folded
// in tiles of kAttentionTile absolute positions, in position order, so a
// row's bits depend only on its position, q and the K/V values: not on block
// size, chunked vs whole prefill, or the other rows of the batch.
//
// Work is planned once per step on the host (plan_paged_prefill, FlashInfer's
// "plan" step) from the StepBatch's host arrays and used by every layer. A
// block runs a few rows of one sequence for one KV head, one warp per (row,
// query head); it loads each K/V tile into shared memory once for all of them.
//
// Cascade: for each group of sequences sharing the physical blocks of
// positions [0, prefix_len), a shared pass attends all the group's rows to the
// prefix, loading each prefix tile once per block of rows from any member, and
// stores each (row, head) state (max, sum, unnormalised output) in the
// workspace. The flat pass then continues each of those rows from its state
// at prefix_len over the sequence's own blocks. The merge order is the CPU's:
// tiles in position order, the suffix continuing the prefix's fold, so the
// output is bitwise the same with cascade on or off. Groups are ignored when
// sliding_window > 0 (the prefix is then not visible to every row), as on the CPU.
//
// Tests: tests/kernels/cuda/paged_prefill_test.cpp, cascade_attention_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/paged_attention.h"

namespace kvscope::cuda {

// One step's work, host side. All arrays are packed into `data` (upload it
// once per step; the launcher reads the device copy):
//   items[i][3]        = data[items_at + 3 i ..]:  sequence, first, end (into rows), flat pass
//   shared_items[i][4] = data[shared_at + 4 i ..]: table sequence, prefix_len, first, end (into rows)
//   rows[k]            = data[rows_at + k]:        query rows; an item's rows are rows[first, end)
//   row_prefix[t]      = data[row_prefix_at + t]:  prefix_len of row t's cascade group, 0 if none
struct PrefillPlan {
  int32_t num_tokens = 0;
  int32_t rows_per_block = 0;  // rows of one block; warps = rows_per_block * query heads per KV head
  int32_t num_items = 0;
  int32_t num_shared_items = 0;
  int32_t items_at = 0, shared_at = 0, rows_at = 0, row_prefix_at = 0;
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

// Plans the step from the HOST copies of the batch and cascade groups.
// Refuses (cudaErrorInvalidValue, message on stderr) what the CPU kernel
// asserts: shapes that do not divide, more than 16 query heads per KV head,
// a cascade prefix that is not a positive multiple of kAttentionTile, or a
// group row before its prefix's end; a sequence in two groups.
cudaError_t plan_paged_prefill(const AttentionShape& shape, const PagedAttentionBatch& host_batch,
                               const CascadeGroups& host_cascade, PrefillPlan* plan);

// Floats of workspace the plan needs: per (row, head) of a cascade group, the
// prefix state (max, sum, head_dim outputs); 0 without cascade.
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
