// Paged attention, CPU. See paged_attention.h for the invariance contract.
// Work is split over (query token, KV head) pairs: the query heads of one
// grouped-query group share their K/V loads. Each pair is computed by exactly
// one thread with the same code, so thread count cannot change the result.
#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_math.h"

namespace kvscope {
namespace {

constexpr int32_t kAttentionTile = 32;  // absolute-position tile; see header
constexpr int32_t kMaxHeadDim = 512;

const float* kv_row(const float* pool, const PagedKvLayer& kv, const int32_t* block_ids,
                    int32_t pos, int32_t num_kv_heads, int32_t kv_head, int32_t head_dim) {
  const int64_t block = block_ids[pos / kv.block_size];
  const int64_t slot = block * kv.block_size + pos % kv.block_size;
  return pool + (slot * num_kv_heads + kv_head) * head_dim;
}

// The state of one tile's keys [lo, hi) (all inside one absolute tile).
void attend_tile(const AttentionShape& shape, const PagedKvLayer& kv, const int32_t* block_ids,
                 int32_t kv_head, const float* q_head, int32_t lo, int32_t hi,
                 AttentionState& state, float* o) {
  float scores[kAttentionTile];
  float m = -INFINITY;
  for (int32_t p = lo; p < hi; ++p) {
    const float* k = kv_row(kv.k, kv, block_ids, p, shape.num_kv_heads, kv_head, shape.head_dim);
    const float s = shape.scale * dot_f32(q_head, k, shape.head_dim);
    scores[p - lo] = s;
    m = std::max(m, s);
  }
  float sum = 0.0f;
  std::fill(o, o + shape.head_dim, 0.0f);
  for (int32_t p = lo; p < hi; ++p) {
    const float w = std::exp(scores[p - lo] - m);
    sum += w;
    const float* v = kv_row(kv.v, kv, block_ids, p, shape.num_kv_heads, kv_head, shape.head_dim);
    axpy_f32(o, w, v, shape.head_dim);
  }
  state.max = m;
  state.sum = sum;
}

}  // namespace

void attend_range(const AttentionShape& shape, const PagedKvLayer& kv, const int32_t* block_ids,
                  int32_t kv_head, const float* q_head, int32_t begin, int32_t end,
                  AttentionState& state, float* o_acc) {
  float tile_o[kMaxHeadDim];
  for (int32_t tile = begin - begin % kAttentionTile; tile < end; tile += kAttentionTile) {
    const int32_t lo = std::max(begin, tile);
    const int32_t hi = std::min(end, tile + kAttentionTile);
    AttentionState tile_state;
    attend_tile(shape, kv, block_ids, kv_head, q_head, lo, hi, tile_state, tile_o);
    merge_attention_state(state, o_acc, tile_state, tile_o, shape.head_dim);
  }
}

void paged_attention(const AttentionShape& shape, const PagedKvLayer& kv,
                     const PagedAttentionBatch& batch, const float* q, float* out,
                     ThreadPool& pool) {
  assert(shape.head_dim > 0 && shape.head_dim <= kMaxHeadDim);
  assert(shape.num_kv_heads > 0 && shape.num_heads % shape.num_kv_heads == 0);
  assert(kv.block_size > 0);
  const int32_t num_tokens = batch.query_start[batch.num_seqs];
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int64_t row = static_cast<int64_t>(shape.num_heads) * shape.head_dim;

  pool.parallel_for(static_cast<int64_t>(num_tokens) * shape.num_kv_heads,
                    [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int32_t t = static_cast<int32_t>(task / shape.num_kv_heads);
      const int32_t kv_head = static_cast<int32_t>(task % shape.num_kv_heads);
      // The sequence owning row t: the last s with query_start[s] <= t.
      const int32_t* qs_end = batch.query_start + batch.num_seqs + 1;
      const int32_t s = static_cast<int32_t>(std::upper_bound(batch.query_start, qs_end, t) -
                                             batch.query_start) - 1;
      const int32_t* block_ids = batch.block_ids + batch.block_table_start[s];
      const int32_t pos = batch.positions[t];
      const int32_t first = shape.sliding_window > 0 ? std::max(0, pos - shape.sliding_window + 1) : 0;
      for (int32_t h = kv_head * group; h < (kv_head + 1) * group; ++h) {
        const float* q_head = q + t * row + static_cast<int64_t>(h) * shape.head_dim;
        float* o = out + t * row + static_cast<int64_t>(h) * shape.head_dim;
        AttentionState state;
        std::fill(o, o + shape.head_dim, 0.0f);
        attend_range(shape, kv, block_ids, kv_head, q_head, first, pos + 1, state, o);
        const float inv = state.sum > 0.0f ? 1.0f / state.sum : 0.0f;
        for (int32_t i = 0; i < shape.head_dim; ++i) o[i] *= inv;
      }
    }
  });
}

}  // namespace kvscope
