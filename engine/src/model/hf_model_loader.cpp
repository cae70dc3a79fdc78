// Hugging Face directory -> ModelConfig, ModelWeights and VocabData. Tensor
// names follow transformers' Llama modelling code:
//   model.embed_tokens.weight, model.norm.weight, lm_head.weight (absent when tied)
//   model.layers.N.{input_layernorm, post_attention_layernorm}.weight
//   model.layers.N.self_attn.{q,k,v,o}_proj.weight (+ q/k/v .bias for Qwen2)
//   model.layers.N.mlp.{gate,up,down}_proj.weight
// post_attention_layernorm is the norm in front of the FFN (GGUF's ffn_norm).
#include "model/hf_model_loader.h"

#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/reference/dequantize.h"
#include "model/llama3_rope.h"
#include "model/safetensors_file.h"
#include "tokenizer/hf_tokenizer_json.h"

namespace kvscope {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// config.json values the loader needs beyond ModelConfig.
struct HfConfig {
  ModelConfig model;
  std::string architecture;  // "llama", "mistral", "qwen2"
  bool tied = false;
  int64_t bos_id = -1;
  int64_t eos_id = -1;
  std::vector<float> rope_freq_factors;  // Llama 3.x rope scaling (model/llama3_rope.h); empty: none
};

// Keeps the shards mapped, plus copies of tensors whose bytes were not aligned
// to their element size in the file.
struct HfBacking {
  std::unique_ptr<SafetensorsCheckpoint> checkpoint;
  std::vector<std::vector<uint8_t>> copies;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// A key that is absent or null counts as absent (configs write "head_dim": null).
const json* find_key(const json& j, const char* key) {
  const auto it = j.find(key);
  return (it == j.end() || it->is_null()) ? nullptr : &*it;
}

Result<int64_t> int_key(const json& j, const std::string& file, const char* key, std::optional<int64_t> fallback) {
  const json* v = find_key(j, key);
  if (!v) {
    if (fallback) return *fallback;
    return Error{fmt::format("{}: required key '{}' is missing", file, key)};
  }
  if (!v->is_number_integer() || v->get<int64_t>() <= 0 || v->get<int64_t>() > (int64_t{1} << 24)) {
    return Error{fmt::format("{}: key '{}' = {} is not a positive integer in range", file, key, v->dump())};
  }
  return v->get<int64_t>();
}

Result<double> float_key(const json& j, const std::string& file, const char* key, double fallback) {
  const json* v = find_key(j, key);
  if (!v) return fallback;
  if (!v->is_number() || !(v->get<double>() > 0.0)) {
    return Error{fmt::format("{}: key '{}' = {} is not a positive number", file, key, v->dump())};
  }
  return v->get<double>();
}

bool bool_key(const json& j, const char* key, bool fallback) {
  const json* v = find_key(j, key);
  return v && v->is_boolean() ? v->get<bool>() : fallback;
}

// bos_token_id / eos_token_id: an integer or a list of them (first one wins).
int64_t token_id_key(const json& j, const char* key) {
  const json* v = find_key(j, key);
  if (v && v->is_array() && !v->empty()) v = &(*v)[0];
  return v && v->is_number_integer() ? v->get<int64_t>() : -1;
}

Result<HfConfig> parse_config(const std::string& dir) {
  const std::string file = (fs::path(dir) / "config.json").string();
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error{fmt::format("{}: no config.json (not a Hugging Face model directory?)", dir)};
  std::stringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{fmt::format("{}: not valid JSON", file)};
  if (!j.is_object()) return Error{fmt::format("{}: not a JSON object (a model's config is {{\"key\": value, ...}})", file)};

  std::string hf_arch;
  if (const json* a = find_key(j, "architectures"); a && a->is_array() && !a->empty() && (*a)[0].is_string()) {
    hf_arch = (*a)[0].get<std::string>();
  } else if (const json* m = find_key(j, "model_type"); m && m->is_string()) {
    hf_arch = m->get<std::string>();
  }
  HfConfig h;
  ModelConfig& c = h.model;
  c.arch = Architecture::Llama;
  c.rope_style = RopeStyle::kHalfSplit;  // Hugging Face Q/K rows are not permuted
  if (hf_arch == "LlamaForCausalLM" || hf_arch == "llama") {
    h.architecture = "llama";
  } else if (hf_arch == "MistralForCausalLM" || hf_arch == "mistral") {
    h.architecture = "mistral";
  } else if (hf_arch == "Qwen2ForCausalLM" || hf_arch == "qwen2") {
    h.architecture = "qwen2";
  } else if (hf_arch.empty()) {
    return Error{fmt::format("{}: names no architecture (neither 'architectures' nor 'model_type'); kvscope loads "
                             "LlamaForCausalLM, MistralForCausalLM and Qwen2ForCausalLM directories",
                             file)};
  } else {
    return Error{fmt::format("{}: architecture '{}' is not supported (kvscope loads LlamaForCausalLM, "
                             "MistralForCausalLM and Qwen2ForCausalLM directories; convert others to GGUF)",
                             file, hf_arch)};
  }

  int64_t v = 0;
  KVSCOPE_ASSIGN(v, int_key(j, file, "num_hidden_layers", std::nullopt));
  c.num_layers = static_cast<int32_t>(v);
  KVSCOPE_ASSIGN(v, int_key(j, file, "hidden_size", std::nullopt));
  c.hidden_size = static_cast<int32_t>(v);
  KVSCOPE_ASSIGN(v, int_key(j, file, "intermediate_size", std::nullopt));
  c.ffn_size = static_cast<int32_t>(v);
  KVSCOPE_ASSIGN(v, int_key(j, file, "num_attention_heads", std::nullopt));
  c.num_heads = static_cast<int32_t>(v);
  KVSCOPE_ASSIGN(v, int_key(j, file, "num_key_value_heads", c.num_heads));
  c.num_kv_heads = static_cast<int32_t>(v);
  KVSCOPE_ASSIGN(v, int_key(j, file, "vocab_size", std::nullopt));
  c.vocab_size = static_cast<int32_t>(v);
  KVSCOPE_ASSIGN(v, int_key(j, file, "max_position_embeddings", 2048));
  c.context_length = static_cast<int32_t>(v);
  if (c.num_heads % c.num_kv_heads != 0) {
    return Error{fmt::format("{}: {} query heads are not a multiple of {} key/value heads", file, c.num_heads,
                             c.num_kv_heads)};
  }
  if (!find_key(j, "head_dim") && c.hidden_size % c.num_heads != 0) {
    return Error{fmt::format("{}: hidden_size {} is not a multiple of {} heads and head_dim is not given", file,
                             c.hidden_size, c.num_heads)};
  }
  KVSCOPE_ASSIGN(v, int_key(j, file, "head_dim", c.hidden_size / c.num_heads));
  c.head_dim = static_cast<int32_t>(v);
  if (c.head_dim % 2 != 0 || c.head_dim > 512) {
    return Error{fmt::format("{}: head dimension {} is not supported (even, at most 512)", file, c.head_dim)};
  }
  double f = 0.0;
  KVSCOPE_ASSIGN(f, float_key(j, file, "rms_norm_eps", 1e-6));  // transformers' default
  c.rms_eps = static_cast<float>(f);
  KVSCOPE_ASSIGN(f, float_key(j, file, "rope_theta", 10000.0));
  c.rope_base = static_cast<float>(f);
  c.rope_base_local = c.rope_base;

  if (const json* rs = find_key(j, "rope_scaling")) {
    // {"rope_type": "default"} is the same as none; anything else changes the angles.
    const std::string type = rs->is_object() ? rs->value("rope_type", rs->value("type", std::string())) : "";
    if (type == "llama3") {
      Llama3RopeScaling scaling;
      KVSCOPE_ASSIGN(scaling.factor, float_key(*rs, file, "factor", 8.0));
      KVSCOPE_ASSIGN(scaling.low_freq_factor, float_key(*rs, file, "low_freq_factor", 1.0));
      KVSCOPE_ASSIGN(scaling.high_freq_factor, float_key(*rs, file, "high_freq_factor", 4.0));
      KVSCOPE_ASSIGN(scaling.original_context, int_key(*rs, file, "original_max_position_embeddings", 8192));
      auto factors = llama3_rope_freq_factors(c.head_dim, c.rope_base, scaling);
      if (!factors.ok()) return Error{fmt::format("{}: {}", file, factors.error())};
      h.rope_freq_factors = std::move(factors).value();
    } else if (type != "default") {
      return Error{fmt::format("{}: rope_scaling {} is not supported yet (null, default or llama3)", file,
                               rs->dump())};
    }
  }
  if (const json* act = find_key(j, "hidden_act"); act && (!act->is_string() || act->get<std::string>() != "silu")) {
    return Error{fmt::format("{}: hidden_act {} is not supported (only silu)", file, act->dump())};
  }
  if (h.architecture != "qwen2" && bool_key(j, "attention_bias", false)) {
    return Error{fmt::format("{}: attention_bias = true is not supported (biases on the output projection)", file)};
  }
  if (bool_key(j, "mlp_bias", false)) return Error{fmt::format("{}: mlp_bias = true is not supported", file)};
  if (h.architecture == "qwen2" && bool_key(j, "use_sliding_window", false)) {
    return Error{fmt::format("{}: use_sliding_window = true is not supported for Qwen2", file)};
  }
  if (h.architecture == "mistral") {
    // Every Mistral layer uses the same window; ModelConfig's window applies to
    // a layer pattern, so instead cap the context at the window, where full
    // attention and windowed attention are the same thing.
    if (const json* w = find_key(j, "sliding_window"); w && w->is_number_integer() && w->get<int64_t>() > 0) {
      c.context_length = static_cast<int32_t>(std::min<int64_t>(c.context_length, w->get<int64_t>()));
    }
  }
  c.qkv_bias = h.architecture == "qwen2";
  h.tied = bool_key(j, "tie_word_embeddings", false);
  h.bos_id = token_id_key(j, "bos_token_id");
  h.eos_id = token_id_key(j, "eos_token_id");

  fs::path name = fs::path(dir).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();
  c.name = name.filename().string();
  if (const json* n = find_key(j, "_name_or_path"); n && n->is_string() && !n->get<std::string>().empty()) {
    c.name = n->get<std::string>();
  }
  return h;
}

TensorType tensor_type_of(SafetensorsDtype d) {
  return d == SafetensorsDtype::F16 ? TensorType::F16 : d == SafetensorsDtype::BF16 ? TensorType::BF16 : TensorType::F32;
}

class TensorReader {
 public:
  TensorReader(const SafetensorsCheckpoint& ckpt, HfBacking& backing, std::string dir)
      : ckpt_(ckpt), backing_(backing), dir_(std::move(dir)) {}

  // [num_rows, row_len] in the file (out_features, in_features).
  Result<WeightMatrix> matrix(const std::string& name, int64_t num_rows, int64_t row_len) {
    const SafetensorsTensor* t = nullptr;
    KVSCOPE_ASSIGN(t, find(name));
    if (t->shape != std::vector<int64_t>{num_rows, row_len}) {
      return Error{fmt::format("{}: tensor '{}' has shape {}, expected [{}, {}]", ckpt_.file_of(name), name,
                               shape_text(t->shape), num_rows, row_len)};
    }
    return WeightMatrix{tensor_type_of(t->dtype), aligned_data(*t), num_rows, row_len};
  }

  // [n], converted to f32.
  Result<std::vector<float>> vector(const std::string& name, int64_t n) {
    const SafetensorsTensor* t = nullptr;
    KVSCOPE_ASSIGN(t, find(name));
    if (t->shape != std::vector<int64_t>{n}) {
      return Error{fmt::format("{}: tensor '{}' has shape {}, expected [{}]", ckpt_.file_of(name), name,
                               shape_text(t->shape), n)};
    }
    std::vector<uint8_t> bytes(t->data, t->data + t->num_bytes);  // an aligned copy
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(tensor_type_of(t->dtype), bytes.data(), out.data(), n);
    return out;
  }

  bool has(const std::string& name) const { return ckpt_.find(name) != nullptr; }

 private:
  Result<const SafetensorsTensor*> find(const std::string& name) const {
    const SafetensorsTensor* t = ckpt_.find(name);
    if (!t) return Error{fmt::format("{}: required tensor '{}' is missing", dir_, name)};
    if (t->dtype != SafetensorsDtype::F32 && t->dtype != SafetensorsDtype::F16 && t->dtype != SafetensorsDtype::BF16) {
      return Error{fmt::format("{}: tensor '{}': dtype {} is not supported (F32, F16 or BF16)", ckpt_.file_of(name),
                               name, safetensors_dtype_name(t->dtype))};
    }
    return t;
  }

  // The data, copied when the file does not align it to its element size (the
  // format does not promise alignment; kernels read whole elements).
  const void* aligned_data(const SafetensorsTensor& t) {
    if (reinterpret_cast<uintptr_t>(t.data) % safetensors_dtype_size(t.dtype) == 0) return t.data;
    backing_.copies.emplace_back(t.data, t.data + t.num_bytes);
    return backing_.copies.back().data();
  }

  const SafetensorsCheckpoint& ckpt_;
  HfBacking& backing_;
  std::string dir_;
};

}  // namespace

bool is_hf_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

Result<ModelConfig> read_hf_config(const std::string& dir, std::string* architecture) {
  auto h = parse_config(dir);
  if (!h.ok()) return Error{h.error()};
  if (architecture) *architecture = h->architecture;
  return h->model;
}

Result<HfModel> load_hf_directory(const std::string& dir) {
  HfConfig h;
  KVSCOPE_ASSIGN(h, parse_config(dir));
  auto backing = std::make_shared<HfBacking>();
  KVSCOPE_ASSIGN(backing->checkpoint, SafetensorsCheckpoint::open_dir(dir));

  auto w = std::make_shared<ModelWeights>();
  w->config = h.model;
  w->rope_freq_factors = h.rope_freq_factors;
  const ModelConfig& c = w->config;
  TensorReader r(*backing->checkpoint, *backing, dir);
  const int64_t hidden = c.hidden_size, q = c.q_size(), kv = c.kv_size(), ffn = c.ffn_size;

  KVSCOPE_ASSIGN(w->token_embd, r.matrix("model.embed_tokens.weight", c.vocab_size, hidden));
  if (r.has("lm_head.weight")) {
    KVSCOPE_ASSIGN(w->output, r.matrix("lm_head.weight", c.vocab_size, hidden));
  } else if (h.tied) {
    w->output = w->token_embd;
  } else {
    return Error{fmt::format("{}: required tensor 'lm_head.weight' is missing (tie_word_embeddings is false)", dir)};
  }
  KVSCOPE_ASSIGN(w->output_norm, r.vector("model.norm.weight", hidden));

  w->layers.resize(static_cast<size_t>(c.num_layers));
  for (int32_t i = 0; i < c.num_layers; ++i) {
    LayerWeights& L = w->layers[static_cast<size_t>(i)];
    const std::string p = fmt::format("model.layers.{}.", i);
    KVSCOPE_ASSIGN(L.attn_norm, r.vector(p + "input_layernorm.weight", hidden));
    KVSCOPE_ASSIGN(L.wq, r.matrix(p + "self_attn.q_proj.weight", q, hidden));
    KVSCOPE_ASSIGN(L.wk, r.matrix(p + "self_attn.k_proj.weight", kv, hidden));
    KVSCOPE_ASSIGN(L.wv, r.matrix(p + "self_attn.v_proj.weight", kv, hidden));
    KVSCOPE_ASSIGN(L.wo, r.matrix(p + "self_attn.o_proj.weight", hidden, q));
    if (c.qkv_bias) {
      KVSCOPE_ASSIGN(L.bq, r.vector(p + "self_attn.q_proj.bias", q));
      KVSCOPE_ASSIGN(L.bk, r.vector(p + "self_attn.k_proj.bias", kv));
      KVSCOPE_ASSIGN(L.bv, r.vector(p + "self_attn.v_proj.bias", kv));
    }
    KVSCOPE_ASSIGN(L.ffn_norm, r.vector(p + "post_attention_layernorm.weight", hidden));
    KVSCOPE_ASSIGN(L.w_gate, r.matrix(p + "mlp.gate_proj.weight", ffn, hidden));
    KVSCOPE_ASSIGN(L.w_up, r.matrix(p + "mlp.up_proj.weight", ffn, hidden));
    KVSCOPE_ASSIGN(L.w_down, r.matrix(p + "mlp.down_proj.weight", hidden, ffn));
  }
  w->backing = backing;
  w->release_file_pages = [backing] {
    for (const auto& shard : backing->checkpoint->files()) shard->release_resident_pages();
  };

  HfModel model;
  KVSCOPE_ASSIGN(model.vocab, read_hf_tokenizer_dir(dir));
  VocabData& v = model.vocab;
  const auto in_vocab = [&](int64_t id) { return id >= 0 && id < static_cast<int64_t>(v.tokens.size()); };
  if (v.bos_id < 0 && in_vocab(h.bos_id)) v.bos_id = static_cast<int32_t>(h.bos_id);
  if (v.eos_id < 0 && in_vocab(h.eos_id)) v.eos_id = static_cast<int32_t>(h.eos_id);
  v.architecture = h.architecture;
  model.weights = std::move(w);
  model.architecture = h.architecture;
  return model;
}

}  // namespace kvscope
