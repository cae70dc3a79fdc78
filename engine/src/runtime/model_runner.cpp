#include "runtime/model_runner.h"

#include <cmath>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstring>

#include "kernels/cpu/add.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/gelu_tanh_mul.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/silu_mul.h"

namespace kvscope {
namespace {

// Adds bias to the `bias.size()` columns at `col` of each row of width `stride`.
void add_bias(float* y, int64_t stride, int64_t col, const std::vector<float>& bias, int32_t num_tokens) {
  if (bias.empty()) return;
  const int64_t n = static_cast<int64_t>(bias.size());
  for (int32_t t = 0; t < num_tokens; ++t) add(y + t * stride + col, bias.data(), n, y + t * stride + col);
}

void norm_rows(const float* x, const std::vector<float>& w, int32_t num_rows, float eps, float* out) {
  rms_norm(x, w.data(), num_rows, static_cast<int64_t>(w.size()), eps, out);
}

}  // namespace

ModelRunner::ModelRunner(std::shared_ptr<const ModelWeights> weights, KvStorage& kv, ThreadPool& pool,
                         NoPacking)
    : weights_(std::move(weights)), kv_(&kv), pool_(&pool) {}

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
  for (const LayerWeights& L : weights_->layers) {
    LayerLinears lin;
    lin.qkv = LinearGroup({&L.wq, &L.wk, &L.wv});
    if (!packed({&L.wq, &L.wk, &L.wv})) return false;
    lin.wo = LinearGroup({&L.wo});
    if (!packed({&L.wo})) return false;
    lin.gate_up = LinearGroup({&L.w_gate, &L.w_up});
    if (!packed({&L.w_gate, &L.w_up})) return false;
    lin.down = LinearGroup({&L.w_down});
    if (!packed({&L.w_down})) return false;
    linears_.push_back(std::move(lin));
  }
  head_ = LinearGroup({&weights_->output});
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
  size(qkv_, n * (c.q_size() + 2 * c.kv_size()));
  size(q_, n * c.q_size());
  size(attn_, n * c.q_size());
  size(gate_up_, n * 2 * c.ffn_size);
  size(act_, n * c.ffn_size);
}

void ModelRunner::reserve(int32_t max_tokens) { resize_activations(std::max(max_tokens, 1)); }

void ModelRunner::ensure_capacity(int32_t num_tokens) {
  if (num_tokens <= capacity_) return;
  resize_activations(std::max(num_tokens, capacity_ * 2));
}

size_t ModelRunner::workspace_bytes() const {
  size_t floats = 0;
  for (const std::vector<float>* v : {&x_, &h_, &qkv_, &q_, &attn_, &o_, &gate_up_, &act_}) floats += v->capacity();
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

  for (int32_t t = 0; t < T; ++t) {
    float* row = x_.data() + t * H;
    embedding_row(w.token_embd.type, w.token_embd.data, batch.token_ids[t], H, row);
    if (c.embedding_scale != 1.0f) {
      for (int64_t i = 0; i < H; ++i) row[i] *= c.embedding_scale;
    }
  }
  const int32_t layers_run = num_layers > 0 ? std::min(num_layers, c.num_layers) : c.num_layers;
  for (int32_t layer = 0; layer < layers_run; ++layer) {
    if (interrupt && interrupt->load(std::memory_order_relaxed)) return false;
    attention_block(layer, batch);
    ffn_block(layer, T);
  }

  // Final norm and head only for the rows whose logits are wanted.
  const int32_t num_logits = static_cast<int32_t>(batch.logits_rows.size());
  logits.resize(static_cast<size_t>(num_logits) * c.vocab_size);
  if (num_logits == 0) return true;
  for (int32_t i = 0; i < num_logits; ++i) {
    rms_norm(x_.data() + batch.logits_rows[i] * H, w.output_norm.data(), 1, H, c.rms_eps, h_.data() + i * H);
  }
  head_.run(h_.data(), num_logits, logits.data(), *pool_, scratch_);
  if (c.final_softcap > 0.0f) {  // Gemma 2
    for (float& x : logits) x = c.final_softcap * std::tanh(x / c.final_softcap);
  }
  return true;
}

void ModelRunner::attention_block(int32_t layer, const StepBatch& batch) {
  const ModelConfig& c = config();
  const LayerWeights& L = weights_->layers[static_cast<size_t>(layer)];
  LayerLinears& lin = linears_[static_cast<size_t>(layer)];
  const int32_t T = batch.num_tokens;
  const int64_t H = c.hidden_size, Q = c.q_size(), KV = c.kv_size(), QKV = Q + 2 * KV;

  // qkv_ rows: [Q | K | V] per token.
  norm_rows(x_.data(), L.attn_norm, T, c.rms_eps, h_.data());
  lin.qkv.run(h_.data(), T, qkv_.data(), *pool_, scratch_);
  add_bias(qkv_.data(), QKV, 0, L.bq, T);
  add_bias(qkv_.data(), QKV, Q, L.bk, T);
  add_bias(qkv_.data(), QKV, Q + KV, L.bv, T);
  if (c.qk_norm) {  // per-head RMSNorm (Gemma 3, Qwen3): each head is a row of head_dim
    for (int32_t t = 0; t < T; ++t) {
      float* row = qkv_.data() + t * QKV;
      rms_norm(row, L.q_norm.data(), c.num_heads, c.head_dim, c.rms_eps, row);
      rms_norm(row + Q, L.k_norm.data(), c.num_kv_heads, c.head_dim, c.rms_eps, row + Q);
    }
  }
  const float base = c.layer_rope_base(layer);
  const std::vector<float>& factors = weights_->rope_freq_factors;
  const float* freq_factors = factors.empty() ? nullptr : factors.data();
  rope(qkv_.data(), T, c.num_heads, c.head_dim, batch.positions.data(), base, c.rope_style, QKV, freq_factors);
  rope(qkv_.data() + Q, T, c.num_kv_heads, c.head_dim, batch.positions.data(), base, c.rope_style, QKV,
       freq_factors);

  for (int32_t t = 0; t < T; ++t) {
    const float* row = qkv_.data() + t * QKV;
    const int64_t slot = batch.slot_mapping[t];
    std::memcpy(q_.data() + t * Q, row, Q * sizeof(float));
    kv_->store(layer, slot, row + Q, row + Q + KV);
  }

  AttentionShape shape;
  shape.num_heads = c.num_heads;
  shape.num_kv_heads = c.num_kv_heads;
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
  const int64_t rows_saved = paged_attention(shape, kv_->layer_view(layer), pb, q_.data(), attn_.data(), *pool_, cascade);
  attention_stats_.time_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A K row and a V row of head_dim floats per (position, KV head).
  attention_stats_.cascade_kv_bytes_saved += rows_saved * 2 * c.head_dim * static_cast<int64_t>(sizeof(float));

  lin.wo.run(attn_.data(), T, o_.data(), *pool_, scratch_);
  if (c.post_norms) norm_rows(o_.data(), L.post_attn_norm, T, c.rms_eps, o_.data());
  add(x_.data(), o_.data(), T * H, x_.data());
}

void ModelRunner::ffn_block(int32_t layer, int32_t T) {
  const ModelConfig& c = config();
  const LayerWeights& L = weights_->layers[static_cast<size_t>(layer)];
  LayerLinears& lin = linears_[static_cast<size_t>(layer)];
  const int64_t H = c.hidden_size, F = c.ffn_size;

  norm_rows(x_.data(), L.ffn_norm, T, c.rms_eps, h_.data());
  lin.gate_up.run(h_.data(), T, gate_up_.data(), *pool_, scratch_);  // rows: [gate | up]
  for (int32_t t = 0; t < T; ++t) {
    const float* gate = gate_up_.data() + t * 2 * F;
    if (c.activation == FfnActivation::SiLU) {
      silu_mul(gate, gate + F, F, act_.data() + t * F);
    } else {
      gelu_tanh_mul(gate, gate + F, F, act_.data() + t * F);
    }
  }
  lin.down.run(act_.data(), T, o_.data(), *pool_, scratch_);
  if (c.post_norms) norm_rows(o_.data(), L.post_ffn_norm, T, c.rms_eps, o_.data());
  add(x_.data(), o_.data(), T * H, x_.data());
}

}  // namespace kvscope
