// Paged attention, CPU. See paged_attention.h for the invariance contract.
// Work is split over (query token, KV head) pairs; the query heads of one
// grouped-query group are computed together so each K and V row is loaded
// once per tile for all of them (decode at large batch is bound by these
// reads). Each pair is computed by exactly one thread with the same code, so
// thread count cannot change the result, and every head's operations run in
// the same order whether it is alone or in a group.
#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_exp.h"
#include "kernels/cpu/vec_math.h"

namespace kvscope {
namespace {

constexpr int32_t kAttentionTile = 32;  // absolute-position tile; see header
constexpr int32_t kMaxHeadDim = 512;
constexpr int32_t kMaxGroup = 16;       // query heads per KV head

// exp(x[i] - m) for i < n, 8 lanes at a time (a value's result never depends
// on its neighbours), then the sum in index order.
float exp_and_sum(const float* x, float m, int32_t n, float* w) {
#if defined(__AVX2__) && defined(__FMA__)
  float padded[kAttentionTile];
  std::copy(x, x + n, padded);
  std::fill(padded + n, padded + (n + 7) / 8 * 8, m);
  for (int32_t i = 0; i < n; i += 8) {
    _mm256_storeu_ps(padded + i, detail::exp8(_mm256_sub_ps(_mm256_loadu_ps(padded + i), _mm256_set1_ps(m))));
  }
  std::copy(padded, padded + n, w);
#else
  for (int32_t i = 0; i < n; ++i) w[i] = std::exp(x[i] - m);
#endif
  float sum = 0.0f;
  for (int32_t i = 0; i < n; ++i) sum += w[i];
  return sum;
}

// Calls fn(first position, run length, pointer to the run's first row) for each
// run of consecutive positions of [lo, hi) that share a block: rows in a run
// are `row_stride` floats apart, so the block lookup happens once per run.
template <typename Fn>
void for_each_run(const float* pool, const PagedKvLayer& kv, const int32_t* block_ids, int32_t lo, int32_t hi,
                  int64_t row_stride, int64_t head_offset, Fn&& fn) {
  for (int32_t p = lo; p < hi;) {
    const int64_t block = block_ids[p / kv.block_size];
    const int32_t off = p % kv.block_size;
    const int32_t run = std::min(hi - p, kv.block_size - off);
    fn(p, run, pool + (block * kv.block_size + off) * row_stride + head_offset);
    p += run;
  }
}

// o[i] = sum_j w[j] * rows[j][i] for i < hd, accumulated in j order with FMA
// (the same per-element sequence as repeated axpy_f32), but with 64 outputs
// held in registers while all rows stream past: no load/store of o per row.
void weighted_row_sum(const float* w, const float* const* rows, int32_t n, int32_t hd, float* o) {
  int32_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; i + 64 <= hd; i += 64) {
    __m256 acc[8];
    for (int r = 0; r < 8; ++r) acc[r] = _mm256_setzero_ps();
    for (int32_t j = 0; j < n; ++j) {
      const __m256 wj = _mm256_set1_ps(w[j]);
      const float* v = rows[j] + i;
      for (int r = 0; r < 8; ++r) acc[r] = _mm256_fmadd_ps(wj, _mm256_loadu_ps(v + 8 * r), acc[r]);
    }
    for (int r = 0; r < 8; ++r) _mm256_storeu_ps(o + i + 8 * r, acc[r]);
  }
#endif
  for (; i < hd; ++i) {
    float acc = 0.0f;
    for (int32_t j = 0; j < n; ++j) acc = std::fma(w[j], rows[j][i], acc);
    o[i] = acc;
  }
}

// The states of one tile's keys [lo, hi) (inside one absolute tile) for a group of heads.
void attend_tile(const AttentionShape& shape, const PagedKvLayer& kv, const int32_t* block_ids, int32_t kv_head,
                 const float* q_group, int32_t group, int32_t lo, int32_t hi, AttentionState* states, float* o) {
  const int32_t hd = shape.head_dim;
  const int64_t row_stride = static_cast<int64_t>(shape.num_kv_heads) * hd;
  const int64_t head_offset = static_cast<int64_t>(kv_head) * hd;
  float scores[kMaxGroup][kAttentionTile];
  const float* v_rows[kAttentionTile];
  for_each_run(kv.k, kv, block_ids, lo, hi, row_stride, head_offset, [&](int32_t p, int32_t run, const float* k) {
    for (int32_t j = 0; j < run; ++j, k += row_stride) {
      for (int32_t g = 0; g < group; ++g) scores[g][p - lo + j] = shape.scale * dot_f32(q_group + g * hd, k, hd);
    }
  });
  for_each_run(kv.v, kv, block_ids, lo, hi, row_stride, head_offset, [&](int32_t p, int32_t run, const float* v) {
    for (int32_t j = 0; j < run; ++j, v += row_stride) v_rows[p - lo + j] = v;
  });
  const int32_t n = hi - lo;
  for (int32_t g = 0; g < group; ++g) {
    const float m = *std::max_element(scores[g], scores[g] + n);
    states[g].max = m;
    states[g].sum = exp_and_sum(scores[g], m, n, scores[g]);  // scores become weights
  }
  for (int32_t g = 0; g < group; ++g) weighted_row_sum(scores[g], v_rows, n, hd, o + g * hd);
}

}  // namespace

void attend_range(const AttentionShape& shape, const PagedKvLayer& kv, const int32_t* block_ids, int32_t kv_head,
                  const float* q_group, int32_t begin, int32_t end, AttentionState* states, float* o_group) {
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t hd = shape.head_dim;
  float tile_o[kMaxGroup * kMaxHeadDim];
  AttentionState tile_states[kMaxGroup];
  for (int32_t tile = begin - begin % kAttentionTile; tile < end; tile += kAttentionTile) {
    const int32_t lo = std::max(begin, tile);
    const int32_t hi = std::min(end, tile + kAttentionTile);
    attend_tile(shape, kv, block_ids, kv_head, q_group, group, lo, hi, tile_states, tile_o);
    for (int32_t g = 0; g < group; ++g) {
      merge_attention_state(states[g], o_group + g * hd, tile_states[g], tile_o + g * hd, hd);
    }
  }
}

void paged_attention(const AttentionShape& shape, const PagedKvLayer& kv, const PagedAttentionBatch& batch,
                     const float* q, float* out, ThreadPool& pool) {
  assert(shape.head_dim > 0 && shape.head_dim <= kMaxHeadDim);
  assert(shape.num_kv_heads > 0 && shape.num_heads % shape.num_kv_heads == 0);
  assert(shape.num_heads / shape.num_kv_heads <= kMaxGroup);
  assert(kv.block_size > 0);
  const int32_t num_tokens = batch.query_start[batch.num_seqs];
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int64_t row = static_cast<int64_t>(shape.num_heads) * shape.head_dim;
  const int64_t group_floats = static_cast<int64_t>(group) * shape.head_dim;

  pool.parallel_for(static_cast<int64_t>(num_tokens) * shape.num_kv_heads, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int32_t t = static_cast<int32_t>(task / shape.num_kv_heads);
      const int32_t kv_head = static_cast<int32_t>(task % shape.num_kv_heads);
      // The sequence owning row t: the last s with query_start[s] <= t.
      const int32_t* qs_end = batch.query_start + batch.num_seqs + 1;
      const int32_t s =
          static_cast<int32_t>(std::upper_bound(batch.query_start, qs_end, t) - batch.query_start) - 1;
      const int32_t* block_ids = batch.block_ids + batch.block_table_start[s];
      const int32_t pos = batch.positions[t];
      const int32_t first = shape.sliding_window > 0 ? std::max(0, pos - shape.sliding_window + 1) : 0;
      float* o = out + t * row + kv_head * group_floats;
      AttentionState states[kMaxGroup];
      std::fill(o, o + group_floats, 0.0f);
      attend_range(shape, kv, block_ids, kv_head, q + t * row + kv_head * group_floats, first, pos + 1, states, o);
      for (int32_t g = 0; g < group; ++g) {
        const float inv = states[g].sum > 0.0f ? 1.0f / states[g].sum : 0.0f;
        for (int32_t i = 0; i < shape.head_dim; ++i) o[g * shape.head_dim + i] *= inv;
      }
    }
  });
}

}  // namespace kvscope
