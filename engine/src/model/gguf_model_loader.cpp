// GGUF -> ModelConfig + ModelWeights. Key names follow the GGUF convention
// "<arch>.<field>"; tensor names "blk.<layer>.<name>.weight".
#include "model/gguf_model_loader.h"

#include <cmath>
#include <fmt/format.h>

#include "kernels/reference/dequantize.h"

namespace kvscope {
namespace {

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

Result<int64_t> required_int(const GgufFile& f, const std::string& key) {
  if (const GgufValue* v = f.find(key); v && v->is_array()) {
    return Error{fmt::format("{}: key '{}' is an array (per-layer values are not supported)",
                             f.path(), key)};
  }
  std::optional<int64_t> v = f.get_int(key);
  if (!v) return Error{fmt::format("{}: required key '{}' is missing or not an integer", f.path(), key)};
  if (*v <= 0 || *v > (int64_t{1} << 24)) {
    return Error{fmt::format("{}: key '{}' = {} is out of range (1 to {})", f.path(), key, *v, int64_t{1} << 24)};
  }
  return *v;
}

// An integer key that may be absent (then `fallback`), in required_int's range when present.
Result<int64_t> optional_int(const GgufFile& f, const std::string& key, int64_t fallback) {
  if (!f.find(key)) return fallback;
  return required_int(f, key);
}

// A float key that may be absent (then `fallback`); present, it must be
// finite and positive, or 0 where `zero_ok` (a NaN epsilon or rope base
// would load, then write NaN logits without a word).
Result<double> optional_float(const GgufFile& f, const std::string& key, double fallback, bool zero_ok = false) {
  if (!f.find(key)) return fallback;
  const std::optional<double> v = f.get_float(key);
  if (!v) return Error{fmt::format("{}: key '{}' is not a number", f.path(), key)};
  if (!std::isfinite(*v) || *v < 0.0 || (*v == 0.0 && !zero_ok)) {
    return Error{fmt::format("{}: key '{}' = {} is out of range (a finite number{})", f.path(), key, *v,
                             zero_ok ? ", 0 or more" : " above 0")};
  }
  return *v;
}

class WeightReader {
 public:
  explicit WeightReader(const GgufFile& f) : f_(f) {}

  // A matrix of num_rows rows of row_len elements: GGUF dims {row_len, num_rows}.
  Result<WeightMatrix> matrix(const std::string& name, int64_t num_rows, int64_t row_len,
                              bool required = true) const {
    const GgufTensorInfo* t = f_.find_tensor(name);
    if (!t) {
      if (!required) return WeightMatrix{};
      return Error{fmt::format("{}: required tensor '{}' is missing", f_.path(), name)};
    }
    const bool shape_ok = (t->dims.size() == 2 && t->dims[0] == row_len && t->dims[1] == num_rows) ||
                          (t->dims.size() == 1 && num_rows == 1 && t->dims[0] == row_len);
    if (!shape_ok) {
      return Error{fmt::format("{}: tensor '{}' has shape {}, expected [{}, {}]", f_.path(), name,
                               dims_text(t->dims), row_len, num_rows)};
    }
    if (!is_supported_weight_type(t->type)) {
      return Error{fmt::format("{}: tensor '{}': type {} is not supported for weight matrices",
                               f_.path(), name, traits_of(t->type).name)};
    }
    return WeightMatrix{t->type, t->data, num_rows, row_len};
  }

  // A vector of n floats (norm weights, biases), converted to f32.
  Result<std::vector<float>> vector(const std::string& name, int64_t n, bool required = true) const {
    const GgufTensorInfo* t = f_.find_tensor(name);
    if (!t) {
      if (!required) return std::vector<float>{};
      return Error{fmt::format("{}: required tensor '{}' is missing", f_.path(), name)};
    }
    if (t->num_elements() != n || t->num_rows() != 1) {
      return Error{fmt::format("{}: tensor '{}' has shape {}, expected [{}]", f_.path(), name,
                               dims_text(t->dims), n)};
    }
    if (t->type != TensorType::F32 && t->type != TensorType::F16 && t->type != TensorType::BF16) {
      return Error{fmt::format("{}: tensor '{}': type {} is not supported for a vector (F32, F16 or BF16)",
                               f_.path(), name, traits_of(t->type).name)};
    }
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(t->type, t->data, out.data(), n);
    return out;
  }

 private:
  const GgufFile& f_;
};

// Rows [first, first + n) of m, as a view of the same bytes (fused tensors).
WeightMatrix row_slice(const WeightMatrix& m, int64_t first, int64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(m.data);
  return WeightMatrix{m.type, bytes + first * static_cast<int64_t>(row_bytes(m.type, m.row_len)), n, m.row_len};
}

}  // namespace

Result<ModelConfig> read_model_config(const GgufFile& f) {
  const std::optional<std::string> arch = f.get_string("general.architecture");
  if (!arch) {
    return Error{fmt::format("{}: key 'general.architecture' is {}", f.path(),
                             f.find("general.architecture") ? "not a string" : "missing")};
  }
  ModelConfig c;
  const std::string& a = *arch;
  if (a == "llama" || a == "mistral") {
    c.arch = Architecture::Llama;
    c.rope_style = RopeStyle::kAdjacentPairs;  // Q/K rows were permuted at conversion
  } else if (a == "qwen2") {
    c.arch = Architecture::Llama;
    c.rope_style = RopeStyle::kHalfSplit;  // converted without the permutation
  } else if (a == "qwen3") {
    c.arch = Architecture::Llama;
    c.rope_style = RopeStyle::kHalfSplit;
    c.qk_norm = true;  // per-head RMSNorm on Q and K before the rotation; no biases
  } else if (a == "phi3") {
    // Q|K|V and gate|up are fused tensors (load_gguf_weights splits them).
    // Phi-3's sliding window (phi3.attention.sliding_window) is ignored, as
    // llama.cpp ignores it: the published weights behave better without it
    // and kvscope's answers are checked against llama.cpp's.
    c.arch = Architecture::Llama;
    c.rope_style = RopeStyle::kHalfSplit;
  } else if (a == "gemma2") {
    c.arch = Architecture::Gemma2;
    c.rope_style = RopeStyle::kHalfSplit;
  } else if (a == "gemma3") {
    c.arch = Architecture::Gemma3;
    c.rope_style = RopeStyle::kHalfSplit;
  } else {
    return Error{fmt::format("{}: architecture '{}' is not supported (kvscope runs llama, mistral, "
                             "qwen2, qwen3, phi3, gemma2 and gemma3)", f.path(), a)};
  }
  c.name = f.get_string("general.name").value_or(a);
  int64_t v = 0;
  KVSCOPE_ASSIGN(v, required_int(f, a + ".block_count"));
  c.num_layers = static_cast<int32_t>(v);
  KVSCOPE_ASSIGN(v, required_int(f, a + ".embedding_length"));
  c.hidden_size = static_cast<int32_t>(v);
  KVSCOPE_ASSIGN(v, required_int(f, a + ".feed_forward_length"));
  c.ffn_size = static_cast<int32_t>(v);
  KVSCOPE_ASSIGN(v, required_int(f, a + ".attention.head_count"));
  c.num_heads = static_cast<int32_t>(v);
  c.num_kv_heads = c.num_heads;
  if (f.find(a + ".attention.head_count_kv")) {
    KVSCOPE_ASSIGN(v, required_int(f, a + ".attention.head_count_kv"));
    c.num_kv_heads = static_cast<int32_t>(v);
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return Error{fmt::format("{}: {} query heads are not a multiple of {} key/value heads", f.path(),
                             c.num_heads, c.num_kv_heads)};
  }
  c.head_dim = c.hidden_size / c.num_heads;
  if (f.find(a + ".attention.key_length")) {
    KVSCOPE_ASSIGN(v, required_int(f, a + ".attention.key_length"));
    c.head_dim = static_cast<int32_t>(v);
  }
  if (c.head_dim % 2 != 0 || c.head_dim > 512) {
    return Error{fmt::format("{}: head dimension {} is not supported (even, at most 512)", f.path(), c.head_dim)};
  }
  KVSCOPE_ASSIGN(v, optional_int(f, a + ".context_length", 2048));
  c.context_length = static_cast<int32_t>(v);
  // An epsilon of 0 is legal (only an all-zero row would divide by it); a rope base must be positive.
  const bool gemma = c.arch == Architecture::Gemma2 || c.arch == Architecture::Gemma3;
  double real = 0.0;
  KVSCOPE_ASSIGN(real, optional_float(f, a + ".attention.layer_norm_rms_epsilon", gemma ? 1e-6 : 1e-5,
                                      /*zero_ok=*/true));
  c.rms_eps = static_cast<float>(real);
  KVSCOPE_ASSIGN(real, optional_float(f, a + ".rope.freq_base", c.arch == Architecture::Gemma3 ? 1e6 : 10000.0));
  c.rope_base = static_cast<float>(real);
  c.rope_base_local = c.rope_base;
  if (const auto scale = f.get_float(a + ".rope.scaling.factor"); scale && *scale != 1.0 && *scale != 0.0) {
    return Error{fmt::format("{}: rope scaling (factor {}) is not supported yet", f.path(), *scale)};
  }
  if (f.find_tensor("rope_factors_long.weight") || f.find_tensor("rope_factors_short.weight")) {
    return Error{fmt::format("{}: LongRoPE (long and short rope factors, Phi-3 128k) is not supported yet", f.path())};
  }
  if (const auto dims = f.get_int(a + ".rope.dimension_count"); dims && *dims > c.head_dim) {
    // More rotated dimensions than a head has: the shape keys disagree (a
    // head's size is key_length, or embedding_length / head_count).
    return Error{fmt::format("{}: rope.dimension_count {} is more than the head dimension {} ({}): the file's "
                             "shape keys disagree",
                             f.path(), *dims, c.head_dim,
                             f.get_int(a + ".attention.key_length")
                                 ? "attention.key_length"
                                 : fmt::format("embedding_length {} / head_count {}", c.hidden_size, c.num_heads))};
  } else if (dims && *dims != c.head_dim) {
    return Error{fmt::format("{}: rope over {} of {} head dimensions (partial rotary) is not supported yet",
                             f.path(), *dims, c.head_dim)};
  }
  if (c.arch == Architecture::Gemma2) {
    // As llama.cpp runs it: sliding window on even layers (pattern 2), the
    // same rope base everywhere, the 27B's scale from hidden / heads.
    KVSCOPE_ASSIGN(v, optional_int(f, a + ".attention.sliding_window", 4096));
    c.sliding_window = static_cast<int32_t>(v);
    c.sliding_window_pattern = 2;
    c.post_norms = true;
    c.embedding_scale = std::sqrt(static_cast<float>(c.hidden_size));
    c.activation = FfnActivation::GeluTanh;
    KVSCOPE_ASSIGN(real, optional_float(f, a + ".attn_logit_softcapping", 50.0, /*zero_ok=*/true));
    c.attn_softcap = static_cast<float>(real);
    KVSCOPE_ASSIGN(real, optional_float(f, a + ".final_logit_softcapping", 30.0, /*zero_ok=*/true));
    c.final_softcap = static_cast<float>(real);
    if (c.num_layers == 46) c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.hidden_size / c.num_heads));
  }
  if (c.arch == Architecture::Gemma3) {
    c.rope_base_local = 10000.0f;  // not stored in the file (docs/model-formats.md)
    KVSCOPE_ASSIGN(v, optional_int(f, a + ".attention.sliding_window", 512));
    c.sliding_window = static_cast<int32_t>(v);
    c.sliding_window_pattern = 6;  // layers 5, 11, 17, ... are global
    c.qk_norm = true;
    c.post_norms = true;
    c.embedding_scale = std::sqrt(static_cast<float>(c.hidden_size));
    c.activation = FfnActivation::GeluTanh;
  }
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd || embd->dims.size() != 2) {
    return Error{fmt::format("{}: required tensor 'token_embd.weight' is missing or not 2-D", f.path())};
  }
  c.vocab_size = static_cast<int32_t>(embd->dims[1]);
  return c;
}

Result<std::shared_ptr<const ModelWeights>> load_gguf_weights(std::shared_ptr<const GgufFile> file) {
  const GgufFile& f = *file;
  auto w = std::make_shared<ModelWeights>();
  KVSCOPE_ASSIGN(w->config, read_model_config(f));
  const ModelConfig& c = w->config;
  const WeightReader r(f);
  const int64_t hidden = c.hidden_size, q = c.q_size(), kv = c.kv_size(), ffn = c.ffn_size;

  KVSCOPE_ASSIGN(w->token_embd, r.matrix("token_embd.weight", c.vocab_size, hidden));
  KVSCOPE_ASSIGN(w->output, r.matrix("output.weight", c.vocab_size, hidden, /*required=*/false));
  if (!w->output.present()) w->output = w->token_embd;  // tied head
  KVSCOPE_ASSIGN(w->output_norm, r.vector("output_norm.weight", hidden));

  // Llama 3.x rope scaling: one divisor per frequency (kernels/cpu/rope.h).
  KVSCOPE_ASSIGN(w->rope_freq_factors, r.vector("rope_freqs.weight", c.head_dim / 2, /*required=*/false));
  // Every layer has at least 6 tensors (two norms, Q|K|V, O, gate|up, down:
  // Phi-3's fused layout; 9 unfused). Checked before the layers are allocated, so that a block_count
  // the file cannot back (found by the loader fuzzer: 2^24 layers asked for
  // a 7 GB allocation) is an error, not an out-of-memory abort.
  constexpr size_t kMinTensorsPerLayer = 6;
  if (static_cast<size_t>(c.num_layers) * kMinTensorsPerLayer > f.tensors().size()) {
    return Error{fmt::format("the model says it has {} layers, but the file holds only {} tensors (each layer "
                             "needs at least {})", c.num_layers, f.tensors().size(), kMinTensorsPerLayer)};
  }
  w->layers.resize(static_cast<size_t>(c.num_layers));
  for (int32_t i = 0; i < c.num_layers; ++i) {
    LayerWeights& L = w->layers[static_cast<size_t>(i)];
    const std::string p = fmt::format("blk.{}.", i);
    KVSCOPE_ASSIGN(L.attn_norm, r.vector(p + "attn_norm.weight", hidden));
    if (f.find_tensor(p + "attn_qkv.weight")) {  // Phi-3: Q, K and V stacked by rows
      WeightMatrix qkv;
      KVSCOPE_ASSIGN(qkv, r.matrix(p + "attn_qkv.weight", q + 2 * kv, hidden));
      L.wq = row_slice(qkv, 0, q);
      L.wk = row_slice(qkv, q, kv);
      L.wv = row_slice(qkv, q + kv, kv);
    } else {
      KVSCOPE_ASSIGN(L.wq, r.matrix(p + "attn_q.weight", q, hidden));
      KVSCOPE_ASSIGN(L.wk, r.matrix(p + "attn_k.weight", kv, hidden));
      KVSCOPE_ASSIGN(L.wv, r.matrix(p + "attn_v.weight", kv, hidden));
    }
    KVSCOPE_ASSIGN(L.wo, r.matrix(p + "attn_output.weight", hidden, q));
    KVSCOPE_ASSIGN(L.bq, r.vector(p + "attn_q.bias", q, false));
    KVSCOPE_ASSIGN(L.bk, r.vector(p + "attn_k.bias", kv, false));
    KVSCOPE_ASSIGN(L.bv, r.vector(p + "attn_v.bias", kv, false));
    KVSCOPE_ASSIGN(L.ffn_norm, r.vector(p + "ffn_norm.weight", hidden));
    if (f.find_tensor(p + "ffn_gate.weight")) {
      KVSCOPE_ASSIGN(L.w_gate, r.matrix(p + "ffn_gate.weight", ffn, hidden));
      KVSCOPE_ASSIGN(L.w_up, r.matrix(p + "ffn_up.weight", ffn, hidden));
    } else {  // Phi-3: ffn_up holds gate then up (the activation applies to the first half)
      WeightMatrix gate_up;
      KVSCOPE_ASSIGN(gate_up, r.matrix(p + "ffn_up.weight", 2 * ffn, hidden));
      L.w_gate = row_slice(gate_up, 0, ffn);
      L.w_up = row_slice(gate_up, ffn, ffn);
    }
    KVSCOPE_ASSIGN(L.w_down, r.matrix(p + "ffn_down.weight", hidden, ffn));
    if (c.qk_norm) {
      KVSCOPE_ASSIGN(L.q_norm, r.vector(p + "attn_q_norm.weight", c.head_dim));
      KVSCOPE_ASSIGN(L.k_norm, r.vector(p + "attn_k_norm.weight", c.head_dim));
    }
    if (c.post_norms) {
      KVSCOPE_ASSIGN(L.post_attn_norm, r.vector(p + "post_attention_norm.weight", hidden));
      KVSCOPE_ASSIGN(L.post_ffn_norm, r.vector(p + "post_ffw_norm.weight", hidden));
    }
  }
  w->config.qkv_bias = !w->layers.empty() && !w->layers[0].bq.empty();
  w->backing = file;
  w->release_file_pages = [file] { file->release_resident_pages(); };
  return std::shared_ptr<const ModelWeights>(std::move(w));
}

size_t ModelWeights::matrix_bytes() const {
  // The embedding table is only gathered from (one row per token); the output
  // head, tied or not, is read whole every step.
  size_t total = output.num_bytes();
  for (const LayerWeights& L : layers) {
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      total += m->num_bytes();
    }
  }
  return total;
}

size_t ModelWeights::held_bytes() const {
  size_t total = matrix_bytes();
  if (token_embd.data != output.data) total += token_embd.num_bytes();  // untied: the head is another matrix
  const auto vector_bytes = [](const std::vector<float>& v) { return v.size() * sizeof(float); };
  total += vector_bytes(output_norm) + vector_bytes(rope_freq_factors);
  for (const LayerWeights& L : layers) {
    for (const std::vector<float>* v : {&L.attn_norm, &L.bq, &L.bk, &L.bv, &L.q_norm, &L.k_norm, &L.post_attn_norm,
                                        &L.ffn_norm, &L.post_ffn_norm}) {
      total += vector_bytes(*v);
    }
  }
  return total;
}

}  // namespace kvscope
