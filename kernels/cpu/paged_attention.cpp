// Paged attention, CPU. See paged_attention.h for the invariance contract.
// Work is split over (query token, KV head) pairs. A tile of keys is loaded
// once (K transposed so that vector lanes are keys, V by address) and used by
// every query head of the grouped-query group, and in the shared pass of
// cascade attention by every row of a task. Each (row, head) is computed by
// one thread with the same code, so thread count cannot change the result,
// and a score's arithmetic never depends on what is computed beside it.
#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vec_exp.h"
#include "kernels/cpu/vec_math.h"

namespace kvscope {
namespace {

constexpr int32_t kMaxHeadDim = 512;
constexpr int32_t kMaxGroup = 16;       // query heads per KV head

// A tile's scores become softmax weights: s[j] = exp(s[j] - max) for j < n,
// 0 for the lanes after n; returns the state (max, sum of the weights). The
// sum is a fixed tree over the 32 lanes (4 vectors of 8 added pairwise, then
// the 8 lanes halved three times), the same whatever n, so it neither waits
// on a 32-add chain nor depends on anything but the tile's scores.
AttentionState softmax_weights(float* s, int32_t n) {
  AttentionState state;
#if defined(__AVX2__) && defined(__FMA__)
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 valid[4];
  __m256 mx = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int v = 0; v < 4; ++v) {
    valid[v] = _mm256_cmp_ps(_mm256_add_ps(lane, _mm256_set1_ps(8.0f * v)), _mm256_set1_ps(float(n)), _CMP_LT_OQ);
    mx = _mm256_max_ps(mx, _mm256_blendv_ps(mx, _mm256_loadu_ps(s + 8 * v), valid[v]));
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  state.max = _mm_cvtss_f32(m4);
  const __m256 m = _mm256_set1_ps(state.max);
  __m256 w[4];
  for (int v = 0; v < 4; ++v) {
    w[v] = _mm256_and_ps(detail::exp8(_mm256_sub_ps(_mm256_loadu_ps(s + 8 * v), m)), valid[v]);
    _mm256_storeu_ps(s + 8 * v, w[v]);
  }
  const __m256 total = _mm256_add_ps(_mm256_add_ps(w[0], w[1]), _mm256_add_ps(w[2], w[3]));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(total), _mm256_extractf128_ps(total, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  state.sum = _mm_cvtss_f32(h);
#else
  state.max = *std::max_element(s, s + n);
  for (int32_t j = 0; j < kAttentionTile; ++j) s[j] = j < n ? std::exp(s[j] - state.max) : 0.0f;
  float lanes[8];
  for (int l = 0; l < 8; ++l) lanes[l] = (s[l] + s[8 + l]) + (s[16 + l] + s[24 + l]);
  for (int l = 0; l < 4; ++l) lanes[l] += lanes[l + 4];
  for (int l = 0; l < 2; ++l) lanes[l] += lanes[l + 2];
  state.sum = lanes[0] + lanes[1];
#endif
  return state;
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

// One tile's keys [lo, hi) of one KV head, ready for any number of query
// heads: K transposed to [head_dim][kAttentionTile] so that a vector lane is
// a key, and the V rows' addresses. Loading it once and using it for many
// query rows is what makes the shared pass of cascade attention cheap.
struct KvTile {
  int32_t n = 0;                        // keys in the tile
  alignas(32) float kt[kMaxHeadDim * kAttentionTile];  // kt[d * kAttentionTile + j] = K[lo + j][d]
  const float* v_rows[kAttentionTile];
  // A cache type other than f32: the tile's rows converted ([j][head_dim]).
  float k_rows_f32[kAttentionTile * kMaxHeadDim];
  float v_rows_f32[kAttentionTile * kMaxHeadDim];
};

alignas(32) const float kZeroRow[kMaxHeadDim] = {};

void load_tile(const AttentionShape& shape, const PagedKvLayer& kv, const int32_t* block_ids, int32_t kv_head,
               int32_t lo, int32_t hi, KvTile& tile) {
  const int32_t hd = shape.head_dim;
  const int64_t row_stride = static_cast<int64_t>(shape.num_kv_heads) * hd;
  const int64_t head_offset = static_cast<int64_t>(kv_head) * hd;
  const float* k_rows[kAttentionTile];
  tile.n = hi - lo;
  if (kv.type == KvCacheType::F32) {
    const float* k_pool = static_cast<const float*>(kv.k);
    const float* v_pool = static_cast<const float*>(kv.v);
    for_each_run(k_pool, kv, block_ids, lo, hi, row_stride, head_offset, [&](int32_t p, int32_t run, const float* k) {
      for (int32_t j = 0; j < run; ++j, k += row_stride) k_rows[p - lo + j] = k;
    });
    for_each_run(v_pool, kv, block_ids, lo, hi, row_stride, head_offset, [&](int32_t p, int32_t run, const float* v) {
      for (int32_t j = 0; j < run; ++j, v += row_stride) tile.v_rows[p - lo + j] = v;
    });
  } else {
    const size_t slot_bytes = kv_row_bytes(kv.type, row_stride);
    const size_t head_bytes = kv_row_bytes(kv.type, head_offset);
    const uint8_t* k_pool = static_cast<const uint8_t*>(kv.k);
    const uint8_t* v_pool = static_cast<const uint8_t*>(kv.v);
    for (int32_t j = 0; j < tile.n; ++j) {
      const int32_t p = lo + j;
      const size_t at = static_cast<size_t>(int64_t{block_ids[p / kv.block_size]} * kv.block_size + p % kv.block_size) *
                            slot_bytes + head_bytes;
      load_kv_row(kv.type, k_pool + at, hd, tile.k_rows_f32 + j * hd);
      load_kv_row(kv.type, v_pool + at, hd, tile.v_rows_f32 + j * hd);
      k_rows[j] = tile.k_rows_f32 + j * hd;
      tile.v_rows[j] = tile.v_rows_f32 + j * hd;
    }
  }
  for (int32_t j = tile.n; j < kAttentionTile; ++j) k_rows[j] = kZeroRow;  // lanes past n score 0
  int32_t d = 0;
#if defined(__AVX2__) && defined(__FMA__)
  // 8 keys x 8 dims at a time: the usual unpack / shuffle / permute transpose.
  for (; d + 8 <= hd; d += 8) {
    for (int32_t j = 0; j < kAttentionTile; j += 8) {
      __m256 r[8], t[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(k_rows[j + i] + d);
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
      }
      for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
      }
      for (int i = 0; i < 4; ++i) {
        _mm256_store_ps(tile.kt + (d + i) * kAttentionTile + j, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_store_ps(tile.kt + (d + i + 4) * kAttentionTile + j, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
      }
    }
  }
#endif
  for (; d < hd; ++d) {
    for (int32_t j = 0; j < kAttentionTile; ++j) tile.kt[d * kAttentionTile + j] = k_rows[j][d];
  }
}

// s[j] = scale * (q . K[j]) for all 32 lanes of the tile, for kCount (1 or 2) query
// heads at once. Each score is an FMA chain over d in index order, one lane
// per key, so its bits depend on nothing but q and K[j]: not on the lane, the
// tile's fill, or which heads are computed together (two at a time only to
// give the FMA units independent chains).
template <int kCount>
void tile_scores(const KvTile& tile, const float* const* q, int32_t hd, float scale, float (*s)[kAttentionTile]) {
#if defined(__AVX2__) && defined(__FMA__)
  __m256 acc[kCount][4];
  for (int c = 0; c < kCount; ++c) {
    for (int v = 0; v < 4; ++v) acc[c][v] = _mm256_setzero_ps();
  }
  for (int32_t d = 0; d < hd; ++d) {
    const float* row = tile.kt + d * kAttentionTile;
    for (int c = 0; c < kCount; ++c) {
      const __m256 qd = _mm256_set1_ps(q[c][d]);
      for (int v = 0; v < 4; ++v) acc[c][v] = _mm256_fmadd_ps(qd, _mm256_load_ps(row + 8 * v), acc[c][v]);
    }
  }
  const __m256 sc = _mm256_set1_ps(scale);
  for (int c = 0; c < kCount; ++c) {
    for (int v = 0; v < 4; ++v) _mm256_storeu_ps(s[c] + 8 * v, _mm256_mul_ps(sc, acc[c][v]));
  }
#else
  for (int c = 0; c < kCount; ++c) {
    for (int32_t j = 0; j < kAttentionTile; ++j) {
      float acc = 0.0f;
      for (int32_t d = 0; d < hd; ++d) acc = std::fma(q[c][d], tile.kt[d * kAttentionTile + j], acc);
      s[c][j] = scale * acc;
    }
  }
#endif
}

// The states of a loaded tile for a group of query heads (q_group: [group][head_dim]).
void attend_tile(const AttentionShape& shape, const KvTile& tile, const float* q_group, int32_t group,
                 AttentionState* states, float* o) {
  const int32_t hd = shape.head_dim;
  float scores[kMaxGroup][kAttentionTile];
  for (int32_t g = 0; g < group; g += 2) {
    const float* qs[2] = {q_group + g * hd, q_group + (g + 1) * hd};
    if (g + 1 < group) {
      tile_scores<2>(tile, qs, hd, shape.scale, scores + g);
    } else {
      tile_scores<1>(tile, qs, hd, shape.scale, scores + g);
    }
  }
  if (shape.softcap > 0.0f) {  // per lane, so a score's bits still depend on q and K[j] alone
    const float cap = shape.softcap;
    for (int32_t g = 0; g < group; ++g) {
      for (int32_t j = 0; j < tile.n; ++j) scores[g][j] = cap * std::tanh(scores[g][j] / cap);
    }
  }
  for (int32_t g = 0; g < group; ++g) states[g] = softmax_weights(scores[g], tile.n);
  for (int32_t g = 0; g < group; ++g) weighted_row_sum(scores[g], tile.v_rows, tile.n, hd, o + g * hd);
}

}  // namespace

void attend_range(const AttentionShape& shape, const PagedKvLayer& kv, const int32_t* block_ids, int32_t kv_head,
                  const float* q_group, int32_t begin, int32_t end, AttentionState* states, float* o_group) {
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t hd = shape.head_dim;
  float tile_o[kMaxGroup * kMaxHeadDim];
  AttentionState tile_states[kMaxGroup];
  KvTile kv_tile;
  for (int32_t tile = begin - begin % kAttentionTile; tile < end; tile += kAttentionTile) {
    const int32_t lo = std::max(begin, tile);
    const int32_t hi = std::min(end, tile + kAttentionTile);
    load_tile(shape, kv, block_ids, kv_head, lo, hi, kv_tile);
    attend_tile(shape, kv_tile, q_group, group, tile_states, tile_o);
    for (int32_t g = 0; g < group; ++g) {
      merge_attention_state(states[g], o_group + g * hd, tile_states[g], tile_o + g * hd, hd);
    }
  }
}

namespace {

// One task of the shared pass: rows [row_begin, row_end) of a group's row
// list, for one KV head.
struct SharedPassTask {
  int32_t group, kv_head, row_begin, row_end;
};
constexpr int32_t kMaxRowsPerTask = 64;

// Row t's attention for one KV head over positions [first, pos], continuing
// from `states` (the heads of the group) and the accumulators already in
// out; then the division by each head's sum. The flat pass starts it from
// empty states at the window's start; the shared pass from the prefix's
// states at the prefix's end.
void own_pass(const AttentionShape& shape, const PagedKvLayer& kv, const PagedAttentionBatch& batch, int32_t s,
              int32_t t, int32_t kv_head, int32_t first, AttentionState* states, const float* q, float* out) {
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int64_t at = static_cast<int64_t>(t) * shape.num_heads * shape.head_dim +
                     static_cast<int64_t>(kv_head) * group * shape.head_dim;
  float* o = out + at;
  attend_range(shape, kv, batch.block_ids + batch.block_table_start[s], kv_head, q + at, first,
               batch.positions[t] + 1, states, o);
  for (int32_t g = 0; g < group; ++g) {
    const float inv = states[g].sum > 0.0f ? 1.0f / states[g].sum : 0.0f;
    for (int32_t i = 0; i < shape.head_dim; ++i) o[g * shape.head_dim + i] *= inv;
  }
}

// A shared-pass task: the group's prefix for the task's rows, tiles outer and
// rows inner, so a tile is loaded and converted once and served from L1 to
// every row; then each row's own blocks. The arithmetic per row is the flat
// pass's, call for call: only the order of loads differs.
void run_shared_task(const AttentionShape& shape, const PagedKvLayer& kv, const PagedAttentionBatch& batch,
                     const CascadeGroups& cascade, const SharedPassTask& task, const int32_t* rows,
                     const int32_t* row_seq, const float* q, float* out) {
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t hd = shape.head_dim;
  const int64_t row = static_cast<int64_t>(shape.num_heads) * hd;
  const int64_t group_floats = static_cast<int64_t>(group) * hd;
  const int32_t prefix = cascade.prefix_len[task.group];
  // Every member holds the same blocks for the prefix: read the first one's table.
  const int32_t* block_ids = batch.block_ids + batch.block_table_start[cascade.seqs[cascade.seq_start[task.group]]];
  AttentionState states[kMaxRowsPerTask][kMaxGroup];
  float tile_o[kMaxGroup * kMaxHeadDim];
  AttentionState tile_states[kMaxGroup];
  KvTile kv_tile;
  const int32_t n = task.row_end - task.row_begin;
  for (int32_t r = 0; r < n; ++r) {
    const int64_t at = rows[task.row_begin + r] * row + task.kv_head * group_floats;
    std::fill(out + at, out + at + group_floats, 0.0f);
    std::fill(states[r], states[r] + group, AttentionState{});
  }
  for (int32_t tile = 0; tile < prefix; tile += kAttentionTile) {
    load_tile(shape, kv, block_ids, task.kv_head, tile, tile + kAttentionTile, kv_tile);
    for (int32_t r = 0; r < n; ++r) {
      const int64_t at = rows[task.row_begin + r] * row + task.kv_head * group_floats;
      attend_tile(shape, kv_tile, q + at, group, tile_states, tile_o);
      for (int32_t g = 0; g < group; ++g) {
        merge_attention_state(states[r][g], out + at + g * hd, tile_states[g], tile_o + g * hd, hd);
      }
    }
  }
  for (int32_t r = 0; r < n; ++r) {
    const int32_t t = rows[task.row_begin + r];
    assert(batch.positions[t] >= prefix);
    own_pass(shape, kv, batch, row_seq[task.row_begin + r], t, task.kv_head, prefix, states[r], q, out);
  }
}

}  // namespace

int64_t paged_attention(const AttentionShape& shape, const PagedKvLayer& kv, const PagedAttentionBatch& batch,
                        const float* q, float* out, ThreadPool& pool, const CascadeGroups& cascade) {
  assert(shape.head_dim > 0 && shape.head_dim <= kMaxHeadDim);
  assert(shape.num_kv_heads > 0 && shape.num_heads % shape.num_kv_heads == 0);
  assert(shape.num_heads / shape.num_kv_heads <= kMaxGroup);
  assert(kv.block_size > 0);
  const int32_t num_tokens = batch.query_start[batch.num_seqs];
  const int32_t num_kv_heads = shape.num_kv_heads;

  // The work, as one list so that one parallel_for (one synchronisation per
  // layer, as without cascade) runs it: shared-pass tasks first, then a
  // (row, KV head) pair for every row outside a cascade group. Reused between
  // calls; thread_local because two engines may step on two threads, and the
  // workers use the caller's instances through the pointers taken below.
  thread_local std::vector<int32_t> rows, row_seq, rows_start, flat_rows;
  thread_local std::vector<SharedPassTask> tasks;
  rows.clear();
  row_seq.clear();
  rows_start.assign(1, 0);
  flat_rows.clear();
  tasks.clear();
  int64_t saved = 0;
  if (cascade.num_groups > 0 && shape.sliding_window == 0) {
    std::vector<char> in_group(static_cast<size_t>(batch.num_seqs), 0);
    for (int32_t g = 0; g < cascade.num_groups; ++g) {
      assert(cascade.prefix_len[g] > 0 && cascade.prefix_len[g] % kAttentionTile == 0);
      for (int32_t i = cascade.seq_start[g]; i < cascade.seq_start[g + 1]; ++i) {
        const int32_t s = cascade.seqs[i];
        in_group[static_cast<size_t>(s)] = 1;
        for (int32_t t = batch.query_start[s]; t < batch.query_start[s + 1]; ++t) {
          rows.push_back(t);
          row_seq.push_back(s);
        }
      }
      rows_start.push_back(static_cast<int32_t>(rows.size()));
    }
    // A few tasks per thread for balance; beyond that, as many rows per task
    // as possible, since each task loads the prefix once. Any split gives the
    // same bits.
    const int64_t target_tasks = 4 * static_cast<int64_t>(pool.num_threads());
    const int64_t num_pairs = static_cast<int64_t>(rows.size()) * num_kv_heads;
    const int32_t rows_per_task = static_cast<int32_t>(
        std::clamp<int64_t>((num_pairs + target_tasks - 1) / target_tasks, 1, kMaxRowsPerTask));
    for (int32_t g = 0; g < cascade.num_groups; ++g) {
      for (int32_t h = 0; h < num_kv_heads; ++h) {
        for (int32_t r = rows_start[g]; r < rows_start[g + 1]; r += rows_per_task) {
          const SharedPassTask task{g, h, r, std::min(r + rows_per_task, rows_start[g + 1])};
          tasks.push_back(task);
          // The flat pass would load the prefix once per row; this task once.
          saved += static_cast<int64_t>(task.row_end - task.row_begin - 1) * cascade.prefix_len[g];
        }
      }
    }
    for (int32_t s = 0; s < batch.num_seqs; ++s) {
      if (in_group[static_cast<size_t>(s)]) continue;
      for (int32_t t = batch.query_start[s]; t < batch.query_start[s + 1]; ++t) flat_rows.push_back(t);
    }
  }
  const bool all_flat = tasks.empty();
  const int64_t num_shared = static_cast<int64_t>(tasks.size());
  const int64_t num_flat = (all_flat ? num_tokens : static_cast<int64_t>(flat_rows.size())) * num_kv_heads;
  const SharedPassTask* task_list = tasks.data();
  const int32_t* row_list = rows.data();
  const int32_t* row_seq_list = row_seq.data();
  const int32_t* flat_list = flat_rows.data();

  pool.parallel_for(num_shared + num_flat, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      if (k < num_shared) {
        run_shared_task(shape, kv, batch, cascade, task_list[k], row_list, row_seq_list, q, out);
        continue;
      }
      const int64_t pair = k - num_shared;
      const int32_t t = all_flat ? static_cast<int32_t>(pair / num_kv_heads) : flat_list[pair / num_kv_heads];
      const int32_t kv_head = static_cast<int32_t>(pair % num_kv_heads);
      // The sequence owning row t: the last s with query_start[s] <= t.
      const int32_t* qs_end = batch.query_start + batch.num_seqs + 1;
      const int32_t s = static_cast<int32_t>(std::upper_bound(batch.query_start, qs_end, t) - batch.query_start) - 1;
      const int32_t pos = batch.positions[t];
      const int32_t group = shape.num_heads / num_kv_heads;
      float* o = out + static_cast<int64_t>(t) * shape.num_heads * shape.head_dim +
                 static_cast<int64_t>(kv_head) * group * shape.head_dim;
      std::fill(o, o + static_cast<int64_t>(group) * shape.head_dim, 0.0f);
      AttentionState states[kMaxGroup];
      const int32_t first = shape.sliding_window > 0 ? std::max(0, pos - shape.sliding_window + 1) : 0;
      own_pass(shape, kv, batch, s, t, kv_head, first, states, q, out);
    }
  });
  return saved;
}

}  // namespace kvscope
