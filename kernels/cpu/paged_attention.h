// Paged attention on the CPU: every query token attends to its own sequence's
// keys and values, read through that sequence's block table.
//
// Invariance (docs/architecture.md): keys are visited in tiles of kAttentionTile absolute
// positions ([0,32), [32,64), ...) whatever the block size, and tile partial
// states are merged strictly in position order. So a query's result depends
// only on its position and the K/V values: not on block size, on which other
// sequences share the batch, on chunked vs whole prefill, nor on thread count.
// Cascade attention later computes prefix tiles with the same tile function and
// merges them in the same order, so it gives bitwise the same answer.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention_state.h"
#include "kernels/cpu/kv_cache_type.h"

namespace kvscope {

class ThreadPool;

// One layer's paged KV cache, pure data. A slot holds one token's row of
// num_kv_heads * head_dim elements in `type` (kv_row_bytes of them); attention
// converts a tile's rows to f32 once and uses them for every query head.
struct PagedKvLayer {
  const void* k = nullptr;  // [num_blocks][block_size][num_kv_heads][head_dim] in `type`
  const void* v = nullptr;  // [num_blocks][block_size][num_kv_heads][head_dim] in `type`
  int32_t block_size = 0;
  KvCacheType type = KvCacheType::F32;
};

struct AttentionShape {
  int32_t num_heads = 0;     // query heads
  int32_t num_kv_heads = 0;  // num_heads is a multiple of it (grouped-query attention)
  int32_t head_dim = 0;
  float scale = 0.0f;          // softmax scale applied to q.k
  int32_t sliding_window = 0;  // 0: off; else key invisible when q_pos - k_pos >= window
  float softcap = 0.0f;        // > 0: scores become softcap * tanh(score / softcap) (Gemma 2)
};

// Query tokens grouped by sequence, with each sequence's block table (CSR).
struct PagedAttentionBatch {
  int32_t num_seqs = 0;
  const int32_t* query_start = nullptr;        // [num_seqs + 1] rows of q/out per sequence
  const int32_t* positions = nullptr;          // [num_tokens] absolute position of each query row
  const int32_t* block_table_start = nullptr;  // [num_seqs + 1] offsets into block_ids
  const int32_t* block_ids = nullptr;          // [sum of table lengths] physical block ids
};

// Cascade attention groups (CSR; num_groups 0: none). The sequences of group
// g hold the same physical blocks for positions [0, prefix_len[g]), and every
// query row of them is at a position >= prefix_len[g] (all of the prefix is
// visible to all of them). prefix_len[g] is a positive multiple of
// kAttentionTile, so the shared pass covers whole tiles and the per-sequence
// pass starts on a tile boundary: the fold over tiles is the flat one.
struct CascadeGroups {
  int32_t num_groups = 0;
  const int32_t* prefix_len = nullptr;  // [num_groups] shared positions, multiple of kAttentionTile
  const int32_t* seq_start = nullptr;   // [num_groups + 1] offsets into seqs
  const int32_t* seqs = nullptr;        // [seq_start[num_groups]] sequence indices into the batch
};

inline constexpr int32_t kAttentionTile = 32;  // absolute-position tile; see the top of this file

// out[t] = softmax(scale * q[t] . K) V over keys at positions
// [max(0, pos - window + 1), pos] of t's sequence. K/V of every attended
// position, including this step's own tokens, must already be stored.
// q, out: [num_tokens][num_heads * head_dim].
//
// With cascade groups (ignored when sliding_window > 0, where the prefix is
// not visible to every row), each group's shared prefix is attended in one
// pass for all its rows, reading each K/V tile once per chunk of rows rather
// than once per sequence; each row's state then continues over the
// sequence's own blocks. The tiles and the merge order are those of the flat
// pass, so the bits are the same with and without cascade.
//
// Returns how many (position, KV head) K/V row pairs the shared passes did
// not load from memory because several query rows shared one load: what the
// flat pass loads for those rows (rows x prefix x KV heads) minus what the
// shared pass loads (0 without cascade). The inspector shows it.
int64_t paged_attention(const AttentionShape& shape, const PagedKvLayer& kv,
                     const PagedAttentionBatch& batch, const float* q, float* out,
                     ThreadPool& pool, const CascadeGroups& cascade = {});

// The attention states of the num_heads / num_kv_heads query heads that share
// KV head `kv_head`, over the keys at positions [begin, end) of one sequence
// (begin/end any positions; the tiling stays absolute). q_group and o_group
// hold those heads one after another: [group][head_dim]. Each K and V row is
// read once for the whole group. Exposed for cascade attention and tests.
void attend_range(const AttentionShape& shape, const PagedKvLayer& kv, const int32_t* block_ids,
                  int32_t kv_head, const float* q_group, int32_t begin, int32_t end,
                  AttentionState* states, float* o_group);

}  // namespace kvscope
