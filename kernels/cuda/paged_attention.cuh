// Paged decode attention on the GPU, split along the context (split-KV /
// "flash decoding"): one query token per sequence attends to its sequence's
// keys read through the block table, in fixed partitions of absolute
// positions [p * P, (p + 1) * P). Each partition stores its attention state
// (max score, sum of exp(score - max), unnormalised output) in a workspace;
// a combine kernel merges the states of a row in partition order:
//   M = max_p m_p,  S = sum_p s_p * exp(m_p - M),
//   out = sum_p o_p * exp(m_p - M) / S.
// A wrong log-sum-exp layout in exactly this combine is the bug this project
// was founded on (DESIGN.md), so tests/kernels/cuda/paged_attention_test.cpp
// runs every partition count from 1 to many against the f64 reference.
//
// Same shapes and cache view as the CPU kernel (kernels/cpu/paged_attention.h):
// GQA, sliding window, softcap, every KV cache type. Partitions and the
// reductions inside them depend on absolute positions only, so a row's bits
// do not depend on block size or on the other sequences of the batch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/paged_attention.h"

namespace kvscope::cuda {

// One decode step's sequences (one query row each), device arrays except max_context.
struct PagedDecodeBatch {
  int32_t num_seqs = 0;
  const int32_t* positions = nullptr;          // [num_seqs] query position; keys [first, pos] are visible
  const int32_t* block_table_start = nullptr;  // [num_seqs + 1] offsets into block_ids
  const int32_t* block_ids = nullptr;          // [sum of table lengths] physical block ids
  int32_t max_context = 0;  // host-side bound: every position + 1 <= max_context (sizes the grid)
};

inline constexpr int32_t kDecodePartitionSize = 256;  // the engine's fixed P (a multiple of kAttentionTile)
inline constexpr int32_t kMaxDecodeHeadDim = 512;
inline constexpr int32_t kMaxDecodePartitionSize = 8192;

// Floats of workspace the launch needs: per (sequence, head, partition)
// two state floats and head_dim output floats.
size_t paged_decode_workspace_floats(int32_t num_seqs, int32_t num_heads, int32_t head_dim, int32_t max_context,
                                     int32_t partition_size);

// out[s] = softmax(scale * q[s] . K) V over the keys at positions
// [max(0, pos - window + 1), pos] of sequence s (softcap applied to the
// scaled scores when > 0). K/V of every attended position must be stored.
// q, out: [num_seqs][num_heads * head_dim] device f32; workspace: device f32
// of at least paged_decode_workspace_floats(...). A sequence whose position
// is >= max_context gets NaN outputs (its partitions were not launched).
// Preconditions: the shape's heads divide (num_heads % num_kv_heads == 0),
// 0 < head_dim <= kMaxDecodeHeadDim, the cache type fits head_dim,
// kv.block_size > 0, partition_size a positive multiple of kAttentionTile
// and <= kMaxDecodePartitionSize, max_context > 0.
cudaError_t paged_decode_attention(const AttentionShape& shape, const PagedKvLayer& kv, const PagedDecodeBatch& batch,
                                   const float* q, float* out, int32_t partition_size, float* workspace,
                                   size_t workspace_floats, cudaStream_t stream);

}  // namespace kvscope::cuda
