// CudaWeights and cuda_unsupported; see cuda_weights.h.
#include "runtime/cuda_weights.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cassert>
#include <cstdint>
#include <utility>

#include "runtime/device_array.h"

namespace kvscope {
namespace {

bool is_quantised_matrix_type(TensorType t) { return t == TensorType::Q4_1 || t == TensorType::Q8_0; }

// The embedding lookup kernel (kernels/cuda/embedding.cuh) reads these.
bool is_embedding_type(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || is_quantised_matrix_type(t);
}

constexpr size_t kAlign = 256;  // cudaMalloc's own alignment, kept for every piece
size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

std::string cuda_unsupported(const ModelWeights& w, const EngineConfig& config) {
  const ModelConfig& c = w.config;
  if (c.arch != Architecture::Llama) {
    return "Gemma 2 / Gemma 3 models (per-head Q/K norms, post-norms, GELU, soft-capping) are CPU-only";
  }
  if (c.qkv_bias) return "Q/K/V biases (Qwen2) are not implemented on the GPU";
  if (c.qk_norm) return "per-head Q/K norms (Qwen3) are not implemented on the GPU";
  if (c.post_norms) return "post-attention / post-FFN norms are not implemented on the GPU";
  if (c.activation != FfnActivation::SiLU) return "only the SiLU feed-forward runs on the GPU";
  if (c.attn_softcap > 0.0f || c.final_softcap > 0.0f) return "soft-capping is not implemented on the GPU";
  if (c.embedding_scale != 1.0f) return "a scaled embedding is not implemented on the GPU";
  if (c.sliding_window > 0 && c.sliding_window_pattern > 0) {
    return "sliding-window layers are not wired into the CUDA backend";
  }
  if (c.head_dim % 2 != 0 || c.head_dim > 256) {
    return fmt::format("head_dim {} (the GPU attention takes an even head_dim up to 256)", c.head_dim);
  }
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0 || c.num_heads / c.num_kv_heads > 16) {
    return fmt::format("{} query heads over {} KV heads (the GPU attention takes up to 16 per KV head)",
                       c.num_heads, c.num_kv_heads);
  }
  if (config.tp > 1) return fmt::format("tensor parallelism (tp = {}) is CPU-only", config.tp);
  if (config.spec == SpecMethod::Draft) return "speculative decoding with a draft model (spec = draft) is CPU-only";
  if (!is_embedding_type(w.token_embd.type)) {
    return fmt::format("token_embd is {}; the GPU embedding reads F32, F16, Q8_0 and Q4_1",
                       traits_of(w.token_embd.type).name);
  }
  auto check = [](const WeightMatrix& m, const std::string& name) -> std::string {
    if (is_quantised_matrix_type(m.type)) return {};
    return fmt::format("{} is {}; the CUDA backend multiplies Q4_1 and Q8_0 matrices only (F32, F16, BF16 and "
                       "K-quant matrices are CPU-only)", name, traits_of(m.type).name);
  };
  if (std::string why = check(w.output, "output (the LM head)"); !why.empty()) return why;
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    const std::pair<const WeightMatrix*, const char*> named[] = {
        {&L.wq, "attn_q"}, {&L.wk, "attn_k"}, {&L.wv, "attn_v"}, {&L.wo, "attn_output"},
        {&L.w_gate, "ffn_gate"}, {&L.w_up, "ffn_up"}, {&L.w_down, "ffn_down"}};
    for (const auto& [m, name] : named) {
      if (std::string why = check(*m, fmt::format("layer {} {}", l, name)); !why.empty()) return why;
    }
  }
  return {};
}

Result<std::unique_ptr<CudaWeights>> CudaWeights::upload(const ModelWeights& w) {
  assert(cuda_unsupported(w, EngineConfig{}).empty());
  std::unique_ptr<CudaWeights> d(new CudaWeights());
  // Two passes over the same list: sizes and offsets, then the copies.
  struct Piece {
    const void* host;
    size_t bytes;
    size_t offset;
  };
  std::vector<Piece> pieces;
  size_t total = 0;
  auto add = [&](const void* host, size_t bytes) {
    pieces.push_back({host, bytes, total});
    total += aligned(bytes);
    return pieces.size() - 1;
  };
  auto add_floats = [&](const std::vector<float>& v) { return add(v.data(), v.size() * sizeof(float)); };
  const size_t embd = add(w.token_embd.data, w.token_embd.num_bytes());
  const bool tied = w.output.data == w.token_embd.data;
  const size_t out = tied ? embd : add(w.output.data, w.output.num_bytes());
  const size_t out_norm = add_floats(w.output_norm);
  const size_t factors = w.rope_freq_factors.empty() ? SIZE_MAX : add_floats(w.rope_freq_factors);
  struct LayerPieces {
    size_t attn_norm, ffn_norm, m[7];
  };
  std::vector<LayerPieces> layer_pieces;
  for (const LayerWeights& L : w.layers) {
    LayerPieces p{};
    p.attn_norm = add_floats(L.attn_norm);
    p.ffn_norm = add_floats(L.ffn_norm);
    const WeightMatrix* ms[7] = {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
    for (int i = 0; i < 7; ++i) p.m[i] = add(ms[i]->data, ms[i]->num_bytes());
    layer_pieces.push_back(p);
  }

  if (cudaMalloc(&d->base_, total) != cudaSuccess) {
    cudaGetLastError();
    d->base_ = nullptr;
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    return Error{fmt::format("cannot allocate {} MiB of GPU memory for the weights ({} MiB free of {} MiB)",
                             total >> 20, free_bytes >> 20, total_bytes >> 20)};
  }
  d->bytes_ = total;
  auto* base = static_cast<uint8_t*>(d->base_);
  for (const Piece& p : pieces) {
    cuda_check(cudaMemcpy(base + p.offset, p.host, p.bytes, cudaMemcpyHostToDevice), "upload of the weights");
  }
  auto at = [&](size_t piece) -> const void* { return base + pieces[piece].offset; };
  auto floats = [&](size_t piece) { return static_cast<const float*>(at(piece)); };
  auto matrix = [&](const WeightMatrix& m, size_t piece) {
    return DeviceMatrix{m.type, at(piece), m.num_rows, m.row_len};
  };
  d->token_embd = matrix(w.token_embd, embd);
  d->output = matrix(w.output, out);
  d->output_norm = floats(out_norm);
  d->rope_freq_factors = factors == SIZE_MAX ? nullptr : floats(factors);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    const LayerPieces& p = layer_pieces[l];
    DeviceLayerWeights& D = d->layers.emplace_back();
    D.attn_norm = floats(p.attn_norm);
    D.ffn_norm = floats(p.ffn_norm);
    D.wq = matrix(L.wq, p.m[0]);
    D.wk = matrix(L.wk, p.m[1]);
    D.wv = matrix(L.wv, p.m[2]);
    D.wo = matrix(L.wo, p.m[3]);
    D.w_gate = matrix(L.w_gate, p.m[4]);
    D.w_up = matrix(L.w_up, p.m[5]);
    D.w_down = matrix(L.w_down, p.m[6]);
  }
  return d;
}

CudaWeights::~CudaWeights() {
  cudaStreamSynchronize(nullptr);  // kernels of the last step may still read them
  cudaFree(base_);
}

}  // namespace kvscope
