#include "parallel/shard_weights.h"

namespace kvscope {

WeightMatrix row_slice(const WeightMatrix& m, int64_t row_begin, int64_t num_rows) {
  WeightMatrix v = m;
  v.data = static_cast<const uint8_t*>(m.data) + static_cast<size_t>(row_begin) * row_bytes(m.type, m.row_len);
  v.num_rows = num_rows;
  return v;
}

std::vector<KPart> wo_parts(const ModelConfig& c, const ShardPlan& plan, const RankShard& s) {
  const int64_t width = static_cast<int64_t>(s.num_q_heads) * c.head_dim;
  if (!plan.deterministic) return {KPart{0, width}};
  const int64_t chunk = static_cast<int64_t>(plan.heads_per_wo_chunk) * c.head_dim;
  std::vector<KPart> parts;
  for (int32_t i = 0; i < s.wo_chunk_end - s.wo_chunk_begin; ++i) parts.push_back(KPart{i * chunk, chunk});
  return parts;
}

std::vector<KPart> down_parts(const ShardPlan& plan, const RankShard& s) {
  if (!plan.deterministic) return {KPart{0, s.ffn_size}};
  std::vector<KPart> parts;
  for (int32_t c = s.down_chunk_begin; c < s.down_chunk_end; ++c) {
    const int64_t begin = plan.down_chunk_start[static_cast<size_t>(c)];
    parts.push_back(KPart{begin - s.ffn_begin, plan.down_chunk_start[static_cast<size_t>(c) + 1] - begin});
  }
  return parts;
}

bool pack_layer_shard(const LayerWeights& L, const ModelConfig& c, const ShardPlan& plan, const RankShard& s,
                      ShardLinears& lin, const PackedGroup& after_group) {
  const int64_t hd = c.head_dim;
  const bool whole = plan.is_plain();
  const WeightMatrix q = row_slice(L.wq, s.q_head_begin * hd, s.num_q_heads * hd);
  const WeightMatrix k = row_slice(L.wk, s.kv_head_begin * hd, s.num_kv_heads * hd);
  const WeightMatrix v = row_slice(L.wv, s.kv_head_begin * hd, s.num_kv_heads * hd);
  lin.qkv = LinearGroup({&q, &k, &v});
  if (!after_group({&L.wq, &L.wk, &L.wv})) return false;
  // Row-parallel: the K range of the rank's heads / FFN rows, cut into parts.
  const int64_t wo_begin = s.q_head_begin * hd;
  for (const KPart& p : wo_parts(c, plan, s)) {
    if (whole) {
      lin.wo.emplace_back(std::vector<const WeightMatrix*>{&L.wo});
    } else {
      lin.wo.emplace_back(std::vector<const WeightMatrix*>{&L.wo}, wo_begin + p.offset, p.size);
    }
  }
  if (!after_group({&L.wo})) return false;
  const WeightMatrix gate = row_slice(L.w_gate, s.ffn_begin, s.ffn_size);
  const WeightMatrix up = row_slice(L.w_up, s.ffn_begin, s.ffn_size);
  lin.gate_up = LinearGroup({&gate, &up});
  if (!after_group({&L.w_gate, &L.w_up})) return false;
  for (const KPart& p : down_parts(plan, s)) {
    if (whole) {
      lin.down.emplace_back(std::vector<const WeightMatrix*>{&L.w_down});
    } else {
      lin.down.emplace_back(std::vector<const WeightMatrix*>{&L.w_down}, s.ffn_begin + p.offset, p.size);
    }
  }
  return after_group({&L.w_down});
}

LinearGroup pack_head_shard(const ModelWeights& w, const RankShard& s) {
  const WeightMatrix head = row_slice(w.output, s.vocab_begin, s.vocab_size);
  return LinearGroup({&head});
}

}  // namespace kvscope
