#include "runtime/model_runner.h"

#include <cmath>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstring>

#include "kernels/cpu/add.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/gelu_tanh_mul.h"
#include "kernels/cpu/kv_cache_type.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/silu_mul.h"

namespace kvscope {
namespace {

// Adds bias[bias_begin, bias_begin + n) to the n columns at `col` of each row
// of width `stride` (a shard adds its slice of the bias).
void add_bias(float* y, int64_t stride, int64_t col, const std::vector<float>& bias, int64_t bias_begin, int64_t n,
              int32_t num_tokens) {
  if (bias.empty()) return;
  for (int32_t t = 0; t < num_tokens; ++t) add(y + t * stride + col, bias.data() + bias_begin, n, y + t * stride + col);
}

void norm_rows(const float* x, const std::vector<float>& w, int32_t num_rows, float eps, float* out) {
  rms_norm(x, w.data(), num_rows, static_cast<int64_t>(w.size()), eps, out);
}

}  // namespace

ModelRunner::ModelRunner(std::shared_ptr<const ModelWeights> weights, KvStorage& kv, ThreadPool& pool,
                         NoPacking)
    : weights_(std::move(weights)), plan_(ShardPlan::whole(weights_->config)), shard_(plan_.ranks[0]), kv_(&kv),
      pool_(&pool) {}

ModelRunner::ModelRunner(std::shared_ptr<const ModelWeights> weights, KvStorage& kv, ThreadPool& pool)
    : ModelRunner(std::move(weights), kv, pool, NoPacking{}) {
  pack_weights({});
}

std::unique_ptr<ModelRunner> ModelRunner::create(std::shared_ptr<const ModelWeights> weights, KvStorage& kv,
                                                 ThreadPool& pool, const RepackProgress& progress) {
  std::unique_ptr<ModelRunner> runner(new ModelRunner(std::move(weights), kv, pool, NoPacking{}));
  if (!runner->pack_weights(progress)) return nullptr;
  return runner;
}

std::unique_ptr<ModelRunner> ModelRunner::create_shard(std::shared_ptr<const ModelWeights> weights,
                                                       const ShardPlan& plan, int32_t rank, Communicator* comm,
                                                       KvStorage& kv, ThreadPool& pool,
                                                       const RepackProgress& progress) {
  assert(rank >= 0 && rank < plan.world_size);
  assert(plan.world_size == 1 || (comm && comm->world_size() == plan.world_size && comm->rank() == rank));
  std::unique_ptr<ModelRunner> runner(new ModelRunner(std::move(weights), kv, pool, NoPacking{}));
  runner->plan_ = plan;
  runner->shard_ = plan.ranks[static_cast<size_t>(rank)];
  runner->comm_ = plan.world_size > 1 ? comm : nullptr;
  runner->split_kv_ = true;
  if (!runner->pack_weights(progress)) return nullptr;
  return runner;
}

bool ModelRunner::pack_weights(const RepackProgress& progress) {
  // Progress by bytes: the groups differ in size (the head alone can be a
  // large share of a small model).
  size_t total = weights_->output.num_bytes(), done = 0;
  for (const LayerWeights& L : weights_->layers) {
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) total += m->num_bytes();
  }
  auto packed = [&](std::initializer_list<const WeightMatrix*> parts) {
    for (const WeightMatrix* m : parts) done += m->num_bytes();
    return !progress || progress(total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0);
  };
  const ModelConfig& c = config();
  wo_parts_ = wo_parts(c, plan_, shard_);
  down_parts_ = down_parts(plan_, shard_);
  for (const LayerWeights& L : weights_->layers) {
    if (!pack_layer_shard(L, c, plan_, shard_, linears_.emplace_back(), packed)) return false;
  }
  head_ = pack_head_shard(*weights_, shard_);
  // The embedding table too is the runner's own, so that once packed, no
  // step reads the model file's mapping (packed_matmul.h says why).
  const WeightMatrix& embd = weights_->token_embd;
  const auto* embd_bytes = static_cast<const uint8_t*>(embd.data);
  token_embd_.assign(embd_bytes, embd_bytes + embd.num_bytes());
  return packed({&weights_->output});
}

void ModelRunner::resize_activations(int32_t capacity) {
  const ModelConfig& c = config();
  capacity_ = capacity;
  const size_t n = static_cast<size_t>(capacity_);
  auto size = [](std::vector<float>& v, size_t count) {
    v.resize(count);
    v.shrink_to_fit();
  };
  size(x_, n * c.hidden_size);
  size(h_, n * c.hidden_size);
  size(o_, n * c.hidden_size);
  const size_t q = static_cast<size_t>(shard_.num_q_heads) * c.head_dim;
  const size_t kv = static_cast<size_t>(shard_.num_kv_heads) * c.head_dim;
  const size_t f = static_cast<size_t>(shard_.ffn_size);
  size(qkv_, n * (q + 2 * kv));
  size(q_, n * q);
  size(attn_, n * q);
  size(gate_up_, n * 2 * f);
  size(act_, n * f);
}

void ModelRunner::reserve(int32_t max_tokens) { resize_activations(std::max(max_tokens, 1)); }

void ModelRunner::ensure_capacity(int32_t num_tokens) {
  if (num_tokens <= capacity_) return;
  resize_activations(std::max(num_tokens, capacity_ * 2));
}

size_t ModelRunner::workspace_bytes() const {
  size_t floats = 0;
  for (const std::vector<float>* v : {&x_, &h_, &qkv_, &q_, &attn_, &o_, &gate_up_, &act_, &part_in_, &partials_,
                                      &gathered_, &head_local_, &head_all_, &q_head_, &out_head_}) {
    floats += v->capacity();
  }
  return floats * sizeof(float);
}

bool ModelRunner::forward(const StepBatch& batch, std::vector<float>& logits, const std::atomic<bool>* interrupt,
                          int32_t num_layers) {
  const ModelConfig& c = config();
  const ModelWeights& w = *weights_;
  const int32_t T = batch.num_tokens;
  assert(T > 0 && static_cast<int32_t>(batch.positions.size()) == T);
  ensure_capacity(T);
  const int64_t H = c.hidden_size;
  attention_stats_ = {};
  num_rope_tables_ = 0;  // this step's positions: new tables

  for (int32_t t = 0; t < T; ++t) {
    float* row = x_.data() + t * H;
    embedding_row(w.token_embd.type, token_embd_.data(), batch.token_ids[t], H, row);
    if (c.embedding_scale != 1.0f) {
      for (int64_t i = 0; i < H; ++i) row[i] *= c.embedding_scale;
    }
  }
  const int32_t layers_run = num_layers > 0 ? std::min(num_layers, c.num_layers) : c.num_layers;
  for (int32_t layer = 0; layer < layers_run; ++layer) {
    if (should_stop(interrupt)) return false;
    attention_block(layer, batch);
    ffn_block(layer, T);
  }

  // Final norm and head only for the rows whose logits are wanted.
  const int32_t num_logits = static_cast<int32_t>(batch.logits_rows.size());
  logits.resize(static_cast<size_t>(num_logits) * c.vocab_size);
  if (num_logits == 0) return true;
  // Consecutive rows (decode, a prefill's last row) go to the head as they
  // are, with the final norm folded into its input quantisation.
  bool consecutive = true;
  for (int32_t i = 1; i < num_logits; ++i) consecutive = consecutive && batch.logits_rows[i] == batch.logits_rows[0] + i;
  const RowNorm final_norm{w.output_norm.data(), c.rms_eps};
  if (consecutive) {
    head(x_.data() + batch.logits_rows[0] * H, num_logits, logits.data(), &final_norm);
  } else {
    for (int32_t i = 0; i < num_logits; ++i) {
      rms_norm(x_.data() + batch.logits_rows[i] * H, w.output_norm.data(), 1, H, c.rms_eps, h_.data() + i * H);
    }
    head(h_.data(), num_logits, logits.data());
  }
  if (c.final_softcap > 0.0f) {  // Gemma 2
    for (float& x : logits) x = c.final_softcap * std::tanh(x / c.final_softcap);
  }
  return true;
}

bool ModelRunner::should_stop(const std::atomic<bool>* interrupt) {
  float stop = interrupt && interrupt->load(std::memory_order_relaxed) ? 1.0f : 0.0f;
  if (comm_) comm_->broadcast(&stop, 1, 0);
  return stop != 0.0f;
}

void ModelRunner::attention_block(int32_t layer, const StepBatch& batch) {
  const ModelConfig& c = config();
  const LayerWeights& L = weights_->layers[static_cast<size_t>(layer)];
  ShardLinears& lin = linears_[static_cast<size_t>(layer)];
  const int32_t T = batch.num_tokens;
  const int64_t H = c.hidden_size, hd = c.head_dim;
  const int32_t num_q = shard_.num_q_heads, num_kv = shard_.num_kv_heads;
  const int64_t Q = num_q * hd, KV = num_kv * hd, QKV = Q + 2 * KV;
  const int64_t q0 = shard_.q_head_begin * hd, kv0 = shard_.kv_head_begin * hd;  // the shard's bias offsets

  // qkv_ rows: [Q | K | V] per token, the shard's heads only. The attention
  // norm is folded into the matmul's input quantisation (h_ is not written).
  const RowNorm attn_norm{L.attn_norm.data(), c.rms_eps};
  lin.qkv.run(x_.data(), T, qkv_.data(), *pool_, scratch_, &attn_norm);
  add_bias(qkv_.data(), QKV, 0, L.bq, q0, Q, T);
  add_bias(qkv_.data(), QKV, Q, L.bk, kv0, KV, T);
  add_bias(qkv_.data(), QKV, Q + KV, L.bv, kv0, KV, T);

  // One pass per token: per-head q/k norms, rotary (q straight into q_, k in
  // place) with this step's shared cos/sin table, K/V into their slot.
  const float* cos_sin = rope_table(c.layer_rope_base(layer), batch);
  for (int32_t t = 0; t < T; ++t) {
    float* row = qkv_.data() + t * QKV;
    if (c.qk_norm) {  // per-head RMSNorm (Gemma 3, Qwen3): each head is a row of head_dim
      rms_norm(row, L.q_norm.data(), num_q, c.head_dim, c.rms_eps, row);
      rms_norm(row + Q, L.k_norm.data(), num_kv, c.head_dim, c.rms_eps, row + Q);
    }
    const float* token_cos_sin = cos_sin + t * hd;
    rope_rotate(row, q_.data() + t * Q, num_q, hd, c.rope_style, token_cos_sin);
    rope_rotate(row + Q, row + Q, num_kv, hd, c.rope_style, token_cos_sin);
    const int64_t slot = batch.slot_mapping[t];
    if (!split_kv_) {
      kv_->store(layer, slot, row + Q, row + Q + KV);
    } else {
      const int32_t first = layer * plan_.num_kv_slots + shard_.kv_slot_begin;
      for (int32_t j = 0; j < num_kv; ++j) kv_->store(first + j, slot, row + Q + j * hd, row + Q + KV + j * hd);
    }
  }

  attend(layer, batch);

  row_parallel(lin.wo, wo_parts_, false, attn_.data(), Q, T, o_.data());
  if (c.post_norms) norm_rows(o_.data(), L.post_attn_norm, T, c.rms_eps, o_.data());
  add(x_.data(), o_.data(), T * H, x_.data());
}

void ModelRunner::attend(int32_t layer, const StepBatch& batch) {
  const ModelConfig& c = config();
  const int32_t T = batch.num_tokens;
  const int32_t num_q = shard_.num_q_heads, num_kv = shard_.num_kv_heads;
  const int64_t hd = c.head_dim, Q = num_q * hd;
  AttentionShape shape;
  shape.num_heads = num_q;
  shape.num_kv_heads = num_kv;
  shape.head_dim = c.head_dim;
  shape.scale = c.softmax_scale();
  shape.softcap = c.attn_softcap;
  shape.sliding_window = c.layer_is_sliding(layer) ? c.sliding_window : 0;
  PagedAttentionBatch pb;
  pb.num_seqs = batch.num_seqs;
  pb.query_start = batch.query_start.data();
  pb.positions = batch.positions.data();
  pb.block_table_start = batch.block_table_start.data();
  pb.block_ids = batch.block_ids.data();
  const CascadeGroups cascade{batch.num_cascade_groups(), batch.cascade_prefix_len.data(),
                              batch.cascade_seq_start.data(), batch.cascade_seqs.data()};
  const auto start = std::chrono::steady_clock::now();
  int64_t rows_saved = 0;
  if (!split_kv_) {
    rows_saved = paged_attention(shape, kv_->layer_view(layer), pb, q_.data(), attn_.data(), *pool_, cascade);
  } else if (num_kv == 1) {
    const int32_t kv_layer = layer * plan_.num_kv_slots + shard_.kv_slot_begin;
    rows_saved = paged_attention(shape, kv_->layer_view(kv_layer), pb, q_.data(), attn_.data(), *pool_, cascade);
  } else {
    // One KV head per storage layer: attend head group by head group. The
    // group's query columns are copied out (the kernel reads q rows whole)
    // and its output copied back; the arithmetic per (token, head) is the
    // kernel's as in one call.
    const int32_t group = num_q / num_kv;
    const int64_t width = group * hd;
    shape.num_heads = group;
    shape.num_kv_heads = 1;
    q_head_.resize(static_cast<size_t>(T * width));
    out_head_.resize(static_cast<size_t>(T * width));
    for (int32_t j = 0; j < num_kv; ++j) {
      for (int32_t t = 0; t < T; ++t) {
        std::memcpy(q_head_.data() + t * width, q_.data() + t * Q + j * width, width * sizeof(float));
      }
      const int32_t kv_layer = layer * plan_.num_kv_slots + shard_.kv_slot_begin + j;
      rows_saved += paged_attention(shape, kv_->layer_view(kv_layer), pb, q_head_.data(), out_head_.data(), *pool_,
                                    cascade);
      for (int32_t t = 0; t < T; ++t) {
        std::memcpy(attn_.data() + t * Q + j * width, out_head_.data() + t * width, width * sizeof(float));
      }
    }
  }
  attention_stats_.time_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A K row and a V row of head_dim elements per (position, KV head), as the cache stores them.
  attention_stats_.cascade_kv_bytes_saved +=
      rows_saved * 2 * static_cast<int64_t>(kv_row_bytes(kv_->type(), c.head_dim));
}

void ModelRunner::ffn_block(int32_t layer, int32_t T) {
  const ModelConfig& c = config();
  const LayerWeights& L = weights_->layers[static_cast<size_t>(layer)];
  ShardLinears& lin = linears_[static_cast<size_t>(layer)];
  const int64_t H = c.hidden_size, F = shard_.ffn_size;

  const RowNorm ffn_norm{L.ffn_norm.data(), c.rms_eps};  // folded into the matmul's input quantisation
  lin.gate_up.run(x_.data(), T, gate_up_.data(), *pool_, scratch_, &ffn_norm);  // rows: [gate | up]
  for (int32_t t = 0; t < T; ++t) {
    const float* gate = gate_up_.data() + t * 2 * F;
    if (c.activation == FfnActivation::SiLU) {
      silu_mul(gate, gate + F, F, act_.data() + t * F);
    } else {
      gelu_tanh_mul(gate, gate + F, F, act_.data() + t * F);
    }
  }
  row_parallel(lin.down, down_parts_, true, act_.data(), F, T, o_.data());
  if (c.post_norms) norm_rows(o_.data(), L.post_ffn_norm, T, c.rms_eps, o_.data());
  add(x_.data(), o_.data(), T * H, x_.data());
}

void ModelRunner::row_parallel(std::vector<LinearGroup>& parts, const std::vector<KPart>& kparts, bool is_down,
                               const float* x, int64_t x_width, int32_t T, float* y) {
  const int64_t H = config().hidden_size, out = static_cast<int64_t>(T) * H;
  // Part i's input: columns kparts[i] of x, contiguous per token (a pointer
  // into x when the part is all of it or there is one token).
  auto part_input = [&](size_t i) -> const float* {
    const KPart& k = kparts[i];
    if (k.size == x_width || T == 1) return x + k.offset;
    part_in_.resize(static_cast<size_t>(T * k.size));
    for (int32_t t = 0; t < T; ++t) {
      std::memcpy(part_in_.data() + t * k.size, x + t * x_width + k.offset, k.size * sizeof(float));
    }
    return part_in_.data();
  };
  if (!plan_.deterministic) {
    assert(parts.size() == 1);
    parts[0].run(part_input(0), T, y, *pool_, scratch_);
    if (comm_) comm_->all_reduce_sum(y, out);
    return;
  }
  // Deterministic: every canonical chunk's partial product on its own, then
  // y = ((p0 + p1) + p2) + ... in chunk order, whichever rank computed each.
  const int32_t max_local = is_down ? plan_.max_down_chunks : plan_.max_wo_chunks;
  partials_.resize(static_cast<size_t>(max_local * out));
  for (size_t i = 0; i < parts.size(); ++i) parts[i].run(part_input(i), T, partials_.data() + i * out, *pool_, scratch_);
  const float* all = partials_.data();
  if (comm_) {
    gathered_.resize(static_cast<size_t>(plan_.world_size * max_local * out));
    comm_->all_gather(partials_.data(), max_local * out, gathered_.data());
    all = gathered_.data();
  }
  bool first = true;
  for (const RankShard& r : plan_.ranks) {
    const int32_t begin = is_down ? r.down_chunk_begin : r.wo_chunk_begin;
    const int32_t end = is_down ? r.down_chunk_end : r.wo_chunk_end;
    const float* rank_partials = comm_ ? all + static_cast<int64_t>(r.rank) * max_local * out : all;
    for (int32_t i = 0; i < end - begin; ++i) {
      const float* p = rank_partials + i * out;
      if (first) {
        std::memcpy(y, p, static_cast<size_t>(out) * sizeof(float));
        first = false;
      } else {
        add(y, p, out, y);
      }
    }
  }
}

const float* ModelRunner::rope_table(float base, const StepBatch& batch) {
  for (size_t i = 0; i < num_rope_tables_; ++i) {
    if (rope_tables_[i].base == base) return rope_tables_[i].cos_sin.data();
  }
  if (num_rope_tables_ == rope_tables_.size()) rope_tables_.emplace_back();
  RopeTable& table = rope_tables_[num_rope_tables_++];
  const ModelConfig& c = config();
  const std::vector<float>& factors = weights_->rope_freq_factors;
  table.base = base;
  table.cos_sin.resize(static_cast<size_t>(batch.num_tokens) * c.head_dim);
  rope_cos_sin(batch.num_tokens, c.head_dim, batch.positions.data(), base, factors.empty() ? nullptr : factors.data(),
               table.cos_sin.data());
  return table.cos_sin.data();
}

void ModelRunner::head(const float* h, int32_t num_rows, float* logits, const RowNorm* norm) {
  if (!comm_) {
    head_.run(h, num_rows, logits, *pool_, scratch_, norm);
    return;
  }
  // Each rank's vocabulary slice, padded to the largest, gathered, then laid
  // out as [num_rows][vocab_size].
  const int64_t V = config().vocab_size, pad = plan_.max_vocab_size * num_rows;
  head_local_.resize(static_cast<size_t>(pad));
  head_all_.resize(static_cast<size_t>(pad * plan_.world_size));
  head_.run(h, num_rows, head_local_.data(), *pool_, scratch_, norm);
  comm_->all_gather(head_local_.data(), pad, head_all_.data());
  for (const RankShard& r : plan_.ranks) {
    const float* src = head_all_.data() + r.rank * pad;
    for (int32_t i = 0; i < num_rows; ++i) {
      std::memcpy(logits + i * V + r.vocab_begin, src + i * r.vocab_size, static_cast<size_t>(r.vocab_size) * sizeof(float));
    }
  }
}

}  // namespace kvscope
