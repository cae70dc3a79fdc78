#include "parallel/shard_plan.h"

#include <algorithm>
#include <cassert>
#include <fmt/format.h>
#include <numeric>

namespace kvscope {
namespace {

// [begin, end) of part i when n items are dealt to `parts` parts as evenly as
// possible, the larger parts first.
int64_t split_point(int64_t n, int64_t parts, int64_t i) { return i * n / parts; }

}  // namespace

ShardPlan ShardPlan::whole(const ModelConfig& c) {
  ShardPlan p;
  p.num_wo_chunks = 1;
  p.heads_per_wo_chunk = c.num_heads;
  p.down_chunk_start = {0, c.ffn_size};
  p.num_kv_slots = c.num_kv_heads;
  p.max_vocab_size = c.vocab_size;
  p.max_wo_chunks = p.max_down_chunks = 1;
  RankShard r;
  r.num_q_heads = c.num_heads;
  r.num_kv_heads = c.num_kv_heads;
  r.wo_chunk_end = 1;
  r.down_chunk_end = 1;
  r.ffn_size = c.ffn_size;
  r.vocab_size = c.vocab_size;
  p.ranks.push_back(r);
  return p;
}

KvStorageShape kv_storage_shape(const ShardPlan& plan, const ModelConfig& c) {
  if (plan.is_plain()) return {c.num_layers, c.kv_size()};
  return {c.num_layers * plan.num_kv_slots, c.head_dim};
}

int64_t kv_block_bytes(const KvStorageShape& shape, int32_t block_size, KvCacheType type) {
  return int64_t{2} * static_cast<int64_t>(kv_row_bytes(type, shape.kv_size)) * shape.num_layers * block_size;
}

int32_t num_kv_head_slots(int32_t num_kv_heads, int32_t tp) { return std::max(num_kv_heads, tp); }

KvStorageShape kv_storage_shape(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim, int32_t tp,
                                bool deterministic) {
  if (tp == 1 && !deterministic) return {num_layers, num_kv_heads * head_dim};
  return {num_layers * num_kv_head_slots(num_kv_heads, tp), head_dim};
}

int64_t k_alignment(TensorType type) { return std::max<int64_t>(32, traits_of(type).block_elems); }

Result<ShardPlan> plan_shards(const ModelWeights& w, int32_t tp, bool deterministic) {
  const ModelConfig& c = w.config;
  if (tp < 1) return Error{fmt::format("tp = {} must be at least 1", tp)};
  // One rank, fast: the plain runner, which any model runs.
  if (tp == 1 && !deterministic) return ShardPlan::whole(c);
  if (tp > kDownChunks) return Error{fmt::format("tp = {} is more than {} ranks", tp, kDownChunks)};
  const int32_t H = c.num_heads, K = c.num_kv_heads, G = H / std::max(K, 1), hd = c.head_dim;
  if (tp > H) return Error{fmt::format("tp = {} is more than the model's {} query heads", tp, H)};

  // The coarsest alignment any layer's wo / down needs.
  int64_t wo_align = 1, down_align = 1;
  for (const LayerWeights& L : w.layers) {
    wo_align = std::lcm(wo_align, k_alignment(L.wo.type));
    down_align = std::lcm(down_align, k_alignment(L.w_down.type));
  }

  ShardPlan p;
  p.world_size = tp;
  p.deterministic = deterministic;
  // wo: a chunk is the fewest whole query heads whose width is aligned.
  p.heads_per_wo_chunk = static_cast<int32_t>(std::lcm<int64_t>(hd, wo_align) / hd);
  if (H % p.heads_per_wo_chunk != 0) {
    return Error{fmt::format("the output projection cannot be cut at head boundaries: head_dim {} needs groups of {} "
                             "heads (K blocks of {}), which do not divide the {} query heads; use tp = 1 and "
                             "tp_reduce = fast", hd, p.heads_per_wo_chunk, wo_align, H)};
  }
  p.num_wo_chunks = H / p.heads_per_wo_chunk;
  // down: kDownChunks runs of whole alignment units.
  const int64_t units = c.ffn_size / down_align;
  if (c.ffn_size % down_align != 0 || units < kDownChunks) {
    return Error{fmt::format("the FFN ({} wide, K blocks of {}) cannot be cut into {} aligned chunks; use tp = 1 and "
                             "tp_reduce = fast", c.ffn_size, down_align, kDownChunks)};
  }
  for (int32_t i = 0; i <= kDownChunks; ++i) p.down_chunk_start.push_back(split_point(units, kDownChunks, i) * down_align);

  // Heads per rank.
  std::vector<std::pair<int32_t, int32_t>> q_ranges;  // [begin, end) per rank
  if (tp <= K) {
    for (int32_t r = 0; r < tp; ++r) {
      q_ranges.emplace_back(static_cast<int32_t>(split_point(K, tp, r)) * G,
                            static_cast<int32_t>(split_point(K, tp, r + 1)) * G);
    }
  } else {
    // Ranks per KV group as even as possible; a group's query heads split among its ranks.
    for (int32_t g = 0; g < K; ++g) {
      const int32_t r0 = static_cast<int32_t>(split_point(tp, K, g)), r1 = static_cast<int32_t>(split_point(tp, K, g + 1));
      const int32_t n = r1 - r0;
      if (n > G) {
        return Error{fmt::format("tp = {} puts {} ranks on a KV head group of only {} query heads; choose tp <= {}",
                                 tp, n, G, K * G)};
      }
      for (int32_t i = 0; i < n; ++i) {
        q_ranges.emplace_back(g * G + static_cast<int32_t>(split_point(G, n, i)),
                              g * G + static_cast<int32_t>(split_point(G, n, i + 1)));
      }
    }
    p.notes.push_back(fmt::format("tp = {} is more than the model's {} KV heads: each rank keeps a copy of the KV "
                                  "head its query heads read ({} copies in all)", tp, K, tp));
  }

  int32_t kv_slot = 0;
  for (int32_t r = 0; r < tp; ++r) {
    RankShard s;
    s.rank = r;
    s.q_head_begin = q_ranges[static_cast<size_t>(r)].first;
    s.num_q_heads = q_ranges[static_cast<size_t>(r)].second - s.q_head_begin;
    if (s.q_head_begin % p.heads_per_wo_chunk != 0 || s.num_q_heads % p.heads_per_wo_chunk != 0) {
      return Error{fmt::format("tp = {}: rank {} would hold query heads {}..{}, which does not fall on the output "
                               "projection's K blocks of {} ({} heads of {}); choose another tp",
                               tp, r, s.q_head_begin, s.q_head_begin + s.num_q_heads - 1, wo_align,
                               p.heads_per_wo_chunk, hd)};
    }
    s.kv_head_begin = s.q_head_begin / G;
    s.num_kv_heads = (s.q_head_begin + s.num_q_heads - 1) / G - s.kv_head_begin + 1;
    s.kv_slot_begin = kv_slot;
    kv_slot += s.num_kv_heads;
    s.wo_chunk_begin = s.q_head_begin / p.heads_per_wo_chunk;
    s.wo_chunk_end = (s.q_head_begin + s.num_q_heads) / p.heads_per_wo_chunk;
    s.down_chunk_begin = static_cast<int32_t>(split_point(kDownChunks, tp, r));
    s.down_chunk_end = static_cast<int32_t>(split_point(kDownChunks, tp, r + 1));
    s.ffn_begin = p.down_chunk_start[static_cast<size_t>(s.down_chunk_begin)];
    s.ffn_size = p.down_chunk_start[static_cast<size_t>(s.down_chunk_end)] - s.ffn_begin;
    s.vocab_begin = split_point(c.vocab_size, tp, r);
    s.vocab_size = split_point(c.vocab_size, tp, r + 1) - s.vocab_begin;
    p.max_vocab_size = std::max(p.max_vocab_size, s.vocab_size);
    p.max_wo_chunks = std::max(p.max_wo_chunks, s.wo_chunk_end - s.wo_chunk_begin);
    p.max_down_chunks = std::max(p.max_down_chunks, s.down_chunk_end - s.down_chunk_begin);
    p.ranks.push_back(s);
  }
  p.num_kv_slots = kv_slot;
  // plan_kv sized the pool before this plan existed, with num_kv_head_slots.
  assert(p.num_kv_slots == num_kv_head_slots(K, tp) && "KV head slots disagree with num_kv_head_slots");
  return p;
}

}  // namespace kvscope
