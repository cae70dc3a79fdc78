// Tiny random models: weights, vocabulary, and the GGUF / Hugging Face writers.
#include "support/tiny_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "kernels/reference/dequantize.h"
#include "kernels/reference/half.h"
#include "support/gguf_writer.h"
#include "tokenizer/byte_level.h"

namespace kvscope::test {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

// splitmix64 + Box-Muller: the same numbers on every platform and library
// (std::normal_distribution is implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ull + 0x1234567ull) {}
  double uniform() {  // (0, 1)
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;
  }
  float normal() {
    const double u1 = uniform(), u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

 private:
  uint64_t state_;
};

// Every tensor in Hugging Face order; matrices are [rows][cols] row-major.
struct TinyLayer {
  std::vector<float> attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, post_attn_norm;
  std::vector<float> ffn_norm, gate, up, down, post_ffn_norm;
};

struct TinyWeights {
  std::vector<float> embed, lm_head, final_norm;  // lm_head empty when tied
  std::vector<TinyLayer> layers;
};

// A row-major matrix with values ~ N(0, scale^2), rounded through `type` so
// both writers store exactly what the GGUF kernels will read.
std::vector<float> random_matrix(Rng& rng, int64_t rows, int64_t cols, float scale, TensorType type) {
  std::vector<float> m(static_cast<size_t>(rows * cols));
  for (float& x : m) x = rng.normal() * scale;
  if (type != TensorType::F32) {
    for (int64_t r = 0; r < rows; ++r) {
      float* row = m.data() + r * cols;
      const std::vector<uint8_t> q = quantize_row(type, row, cols);
      dequantize_row_ref(type, q.data(), row, cols);
    }
  }
  return m;
}

std::vector<float> random_vector(Rng& rng, int64_t n, float mean, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = mean + rng.normal() * scale;
  return v;
}

Status check_spec(const TinyModelSpec& s) {
  if (s.layers < 1 || s.hidden < 1 || s.ffn < 1 || s.heads < 1 || s.kv_heads < 1 || s.head_dim < 2 ||
      s.head_dim % 2 != 0 || s.heads % s.kv_heads != 0) {
    return Error{"tiny model: sizes must be positive, head_dim even, heads a multiple of kv_heads"};
  }
  if (s.vocab < 259) return Error{"tiny model: vocab must be at least 259 (256 bytes + 3 specials)"};
  const int64_t block = traits_of(s.matrix_type).block_elems;
  for (int64_t len : {int64_t{s.hidden}, int64_t{s.ffn}, int64_t{s.heads} * s.head_dim}) {
    if (len % block != 0) {
      return Error{fmt::format("tiny model: row length {} is not a multiple of {}'s block of {}", len,
                               traits_of(s.matrix_type).name, block)};
    }
  }
  if (s.arch != Architecture::Llama && s.qkv_bias) return Error{"tiny model: Gemma has no Q/K/V biases"};
  if (!s.family.empty() && (s.family != "qwen3" && s.family != "phi3")) {
    return Error{"tiny model: family must be empty, qwen3 or phi3"};
  }
  if (!s.family.empty() && (s.arch != Architecture::Llama || s.qkv_bias)) {
    return Error{"tiny model: qwen3 and phi3 are Llama-family models without biases"};
  }
  return Status::success();
}

TinyWeights make_weights(const TinyModelSpec& s) {
  Rng rng(s.seed);
  const TensorType t = s.matrix_type;
  const int64_t H = s.hidden, F = s.ffn, Q = int64_t{s.heads} * s.head_dim, KV = int64_t{s.kv_heads} * s.head_dim;
  const float in_h = 1.0f / std::sqrt(static_cast<float>(H));
  TinyWeights w;
  // Embedding rows of norm ~2: tied logits then spread over a few units, so
  // greedy choices have clear margins.
  w.embed = random_matrix(rng, s.vocab, H, 2.0f * in_h, t);
  if (!s.tied) w.lm_head = random_matrix(rng, s.vocab, H, 2.0f * in_h, t);
  w.final_norm = random_vector(rng, H, 1.0f, 0.1f);
  const bool gemma = s.arch != Architecture::Llama;  // Gemma 2 or 3
  for (int i = 0; i < s.layers; ++i) {
    TinyLayer L;
    L.attn_norm = random_vector(rng, H, 1.0f, 0.1f);
    L.wq = random_matrix(rng, Q, H, in_h, t);
    L.wk = random_matrix(rng, KV, H, in_h, t);
    L.wv = random_matrix(rng, KV, H, in_h, t);
    L.wo = random_matrix(rng, H, Q, 1.0f / std::sqrt(static_cast<float>(Q)), t);
    if (s.qkv_bias) {
      L.bq = random_vector(rng, Q, 0.0f, 0.1f);
      L.bk = random_vector(rng, KV, 0.0f, 0.1f);
      L.bv = random_vector(rng, KV, 0.0f, 0.1f);
    }
    L.ffn_norm = random_vector(rng, H, 1.0f, 0.1f);
    L.gate = random_matrix(rng, F, H, in_h, t);
    L.up = random_matrix(rng, F, H, in_h, t);
    L.down = random_matrix(rng, H, F, 1.0f / std::sqrt(static_cast<float>(F)), t);
    if (s.arch == Architecture::Gemma3 || s.family == "qwen3") {
      L.q_norm = random_vector(rng, s.head_dim, 1.0f, 0.1f);
      L.k_norm = random_vector(rng, s.head_dim, 1.0f, 0.1f);
    }
    if (gemma) {
      L.post_attn_norm = random_vector(rng, H, 1.0f, 0.1f);
      L.post_ffn_norm = random_vector(rng, H, 1.0f, 0.1f);
    }
    w.layers.push_back(std::move(L));
  }
  return w;
}

std::vector<float> concat(std::vector<float> a, const std::vector<float>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// llama.cpp's conversion order for Q/K: within each head, HF row i (half a =
// i / (d/2), index b = i % (d/2)) becomes row b * 2 + a, so that HF's pairs
// (b, b + d/2) become adjacent (2b, 2b + 1).
std::vector<float> permute_qk_rows(const std::vector<float>& w, int num_heads, int head_dim, int64_t row_len) {
  std::vector<float> out(w.size());
  const int half = head_dim / 2;
  for (int h = 0; h < num_heads; ++h) {
    for (int i = 0; i < head_dim; ++i) {
      const int64_t src = int64_t{h} * head_dim + i;
      const int64_t dst = int64_t{h} * head_dim + (i % half) * 2 + i / half;
      std::copy_n(w.data() + src * row_len, row_len, out.data() + dst * row_len);
    }
  }
  return out;
}

std::vector<float> permute_qk_vector(const std::vector<float>& b, int num_heads, int head_dim) {
  return permute_qk_rows(b, num_heads, head_dim, 1);
}

// ---- vocabulary ----

struct TinyVocab {
  std::vector<std::string> tokens;  // byte-level text
  std::vector<int32_t> types;       // GGUF token types: 1 normal, 3 control
  std::vector<std::pair<std::string, std::string>> merges;  // byte-level text, rank order
};

constexpr const char* kChatMlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

TinyVocab make_vocab(int vocab_size) {
  TinyVocab v;
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(byte_level::encode(std::string(1, static_cast<char>(b))));
    v.types.push_back(1);
  }
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    v.tokens.push_back(special);
    v.types.push_back(3);
  }
  // Merges in raw bytes; each one's inputs exist before it.
  static const std::pair<const char*, const char*> kMerges[] = {
      {" ", "t"}, {"h", "e"}, {" t", "he"}, {"i", "n"}, {" ", "a"}, {"e", "r"}, {"o", "n"}, {" ", "s"},
      {"r", "e"}, {"a", "n"}, {" ", "w"},   {"o", "r"}, {"e", "n"}, {"a", "t"}, {" a", "n"}, {"in", "g"},
  };
  for (const auto& [a, b] : kMerges) {
    if (static_cast<int>(v.tokens.size()) >= vocab_size) break;
    v.merges.emplace_back(byte_level::encode(a), byte_level::encode(b));
    v.tokens.push_back(byte_level::encode(std::string(a) + b));
    v.types.push_back(1);
  }
  while (static_cast<int>(v.tokens.size()) < vocab_size) {
    v.tokens.push_back(fmt::format("<|extra_{}|>", v.tokens.size()));
    v.types.push_back(3);
  }
  return v;
}

Status write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Error{path.string() + ": cannot create"};
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!f) return Error{path.string() + ": write failed"};
  return Status::success();
}

Status write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  return write_text(path, std::string(bytes.begin(), bytes.end()));
}

std::vector<uint8_t> matrix_bytes(TensorType type, const std::vector<float>& m, int64_t row_len) {
  std::vector<uint8_t> out;
  for (size_t r = 0; r * row_len < m.size(); ++r) {
    const std::vector<uint8_t> row = quantize_row(type, m.data() + r * row_len, row_len);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

const char* dtype_name(TensorType t) {
  return t == TensorType::F16 ? "F16" : t == TensorType::BF16 ? "BF16" : "F32";
}

}  // namespace

std::vector<uint8_t> quantize_row(TensorType type, const float* src, int64_t n) {
  std::vector<uint8_t> out;
  auto put16 = [&out](uint16_t v) {
    out.push_back(static_cast<uint8_t>(v & 0xff));
    out.push_back(static_cast<uint8_t>(v >> 8));
  };
  switch (type) {
    case TensorType::F32:
      out.resize(static_cast<size_t>(n) * 4);
      std::memcpy(out.data(), src, out.size());
      break;
    case TensorType::F16:
      for (int64_t i = 0; i < n; ++i) put16(f32_to_fp16(src[i]));
      break;
    case TensorType::BF16:
      for (int64_t i = 0; i < n; ++i) put16(f32_to_bf16(src[i]));
      break;
    case TensorType::Q8_0:  // per 32: f16 d, 32 x int8; value = q * d
      for (int64_t b = 0; b < n; b += 32) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(src[b + j]));
        const float d = amax / 127.0f;
        const float id = d > 0.0f ? 1.0f / d : 0.0f;
        put16(f32_to_fp16(d));
        for (int j = 0; j < 32; ++j) {
          const int q = static_cast<int>(std::lround(src[b + j] * id));
          out.push_back(static_cast<uint8_t>(static_cast<int8_t>(std::clamp(q, -127, 127))));
        }
      }
      break;
    case TensorType::Q4_1:  // per 32: f16 d, f16 m, 16 bytes; byte j = q[j] | q[j + 16] << 4; value = q * d + m
      for (int64_t b = 0; b < n; b += 32) {
        float lo = src[b], hi = src[b];
        for (int j = 1; j < 32; ++j) {
          lo = std::min(lo, src[b + j]);
          hi = std::max(hi, src[b + j]);
        }
        const float d = (hi - lo) / 15.0f;
        const float id = d > 0.0f ? 1.0f / d : 0.0f;
        put16(f32_to_fp16(d));
        put16(f32_to_fp16(lo));
        uint8_t q[32];
        for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(std::clamp<long>(std::lround((src[b + j] - lo) * id), 0, 15));
        for (int j = 0; j < 16; ++j) out.push_back(static_cast<uint8_t>(q[j] | (q[j + 16] << 4)));
      }
      break;
    default:
      break;  // not offered by TinyModelSpec (check_spec only checks block sizes)
  }
  return out;
}

std::vector<uint8_t> build_safetensors(const std::vector<SafetensorsEntry>& tensors,
                                       const std::map<std::string, std::string>& metadata) {
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const SafetensorsEntry& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", ordered_json::array({offset, offset + t.bytes.size()})}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>((uint64_t{text.size()} >> (8 * i)) & 0xff));
  out.insert(out.end(), text.begin(), text.end());
  for (const SafetensorsEntry& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

std::string tiny_model_temp_path(const std::string& suite) {
  return (std::filesystem::temp_directory_path() /
          ("kvscope_" + suite + "_tiny_" + std::to_string(::getpid()) + ".gguf"))
      .string();
}

TinyModelSpec tensor_parallel_tiny_spec(TensorType matrix_type) {
  TinyModelSpec spec;
  spec.heads = 6;
  spec.kv_heads = 3;
  spec.head_dim = 32;
  spec.hidden = 96;
  spec.ffn = 256;
  spec.matrix_type = matrix_type;
  return spec;
}

Status write_tiny_gguf(const TinyModelSpec& s, const std::string& path) {
  if (Status st = check_spec(s); !st.ok()) return st;
  const TinyWeights w = make_weights(s);
  const TinyVocab vocab = make_vocab(s.vocab);
  const bool gemma = s.arch != Architecture::Llama;  // Gemma 2 or 3
  const bool qwen = !gemma && s.qkv_bias;
  const std::string a = s.arch == Architecture::Gemma2 ? "gemma2"
                        : gemma                        ? "gemma3"
                        : qwen                         ? "qwen2"
                        : !s.family.empty()            ? s.family
                                                       : "llama";
  const bool fused = s.family == "phi3";
  const TensorType t = s.matrix_type;
  const int64_t H = s.hidden, F = s.ffn, Q = int64_t{s.heads} * s.head_dim;

  GgufWriter g;
  g.set_string("general.architecture", a);
  // llama.cpp gives special tokens per-model attributes by general.name (a
  // "phi3" name looks up "</s>", which the tiny vocabulary lacks).
  g.set_string("general.name", a == "phi3" ? std::string("tiny-fused-qkv") : "tiny-" + a);
  for (const auto& [key, value] : s.gguf_f32) g.set_f32(key, value);
  for (const auto& [key, value] : s.gguf_u32) g.set_u32(key, value);
  for (const auto& [key, value] : s.gguf_str) g.set_string(key, value);
  g.set_u32(a + ".block_count", static_cast<uint32_t>(s.layers));
  g.set_u32(a + ".context_length", static_cast<uint32_t>(s.context_length));
  g.set_u32(a + ".embedding_length", static_cast<uint32_t>(s.hidden));
  g.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(s.ffn));
  g.set_u32(a + ".attention.head_count", static_cast<uint32_t>(s.heads));
  g.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.kv_heads));
  g.set_u32(a + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
  g.set_u32(a + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
  g.set_f32(a + ".attention.layer_norm_rms_epsilon", gemma ? 1e-6f : 1e-5f);
  g.set_f32(a + ".rope.freq_base", gemma ? 1e6f : 10000.0f);
  if (gemma && s.sliding_window > 0) g.set_u32(a + ".attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
  std::vector<std::string> merges;
  for (const auto& [x, y] : vocab.merges) merges.push_back(x + " " + y);
  g.set_string("tokenizer.ggml.model", "gpt2");
  g.set_string("tokenizer.ggml.pre", s.tokenizer_pre);
  const size_t num_tokens = s.gguf_num_tokens > 0 ? static_cast<size_t>(s.gguf_num_tokens) : vocab.tokens.size();
  g.set_string_array("tokenizer.ggml.tokens",
                     std::vector<std::string>(vocab.tokens.begin(), vocab.tokens.begin() + num_tokens));
  g.set_i32_array("tokenizer.ggml.token_type",
                  std::vector<int32_t>(vocab.types.begin(), vocab.types.begin() + num_tokens));
  g.set_string_array("tokenizer.ggml.merges", merges);
  g.set_u32("tokenizer.ggml.bos_token_id", kTinyEndOfText);
  g.set_u32("tokenizer.ggml.eos_token_id", kTinyEndOfText);
  g.set_bool("tokenizer.ggml.add_bos_token", s.add_bos);
  // A spec's own template (gguf_str) wins over the ChatML default.
  if (!s.gguf_str.contains("tokenizer.chat_template")) g.set_string("tokenizer.chat_template", kChatMlTemplate);
  // Again after the shape's and the tokenizer's keys, so that a test can
  // replace one of them (a key is set in place: the files of the recorded
  // references keep their bytes).
  for (const auto& [key, value] : s.gguf_f32) g.set_f32(key, value);
  for (const auto& [key, value] : s.gguf_u32) g.set_u32(key, value);
  for (const auto& [key, value] : s.gguf_str) g.set_string(key, value);

  auto matrix = [&](const std::string& name, const std::vector<float>& m, int64_t rows, int64_t cols) {
    g.add_tensor(name, t, {cols, rows}, matrix_bytes(t, m, cols));
  };
  auto vec = [&](const std::string& name, const std::vector<float>& v) {
    g.add_f32_tensor(name, {static_cast<int64_t>(v.size())}, v);
  };
  matrix("token_embd.weight", w.embed, s.vocab, H);
  if (!s.tied) matrix("output.weight", w.lm_head, s.vocab, H);
  vec("output_norm.weight", w.final_norm);
  const bool permute = a == "llama";  // llama.cpp permutes Q/K of llama models only
  if (s.rope_freqs) {
    // Drawn after every weight, so the other tensors are the same with or without.
    Rng rng(s.seed + 7919);
    std::vector<float> factors(static_cast<size_t>(s.head_dim / 2));
    for (float& f : factors) f = 1.0f + 7.0f * static_cast<float>(rng.uniform());
    vec("rope_freqs.weight", factors);
  }
  for (int i = 0; i < s.layers; ++i) {
    const TinyLayer& L = w.layers[static_cast<size_t>(i)];
    const std::string p = fmt::format("blk.{}.", i);
    vec(p + "attn_norm.weight", L.attn_norm);
    if (fused) {
      matrix(p + "attn_qkv.weight", concat(concat(L.wq, L.wk), L.wv), Q + 2 * int64_t{s.kv_heads} * s.head_dim, H);
    } else {
      matrix(p + "attn_q.weight", permute ? permute_qk_rows(L.wq, s.heads, s.head_dim, H) : L.wq, Q, H);
      matrix(p + "attn_k.weight", permute ? permute_qk_rows(L.wk, s.kv_heads, s.head_dim, H) : L.wk,
             int64_t{s.kv_heads} * s.head_dim, H);
      matrix(p + "attn_v.weight", L.wv, int64_t{s.kv_heads} * s.head_dim, H);
    }
    matrix(p + "attn_output.weight", L.wo, H, Q);
    if (s.qkv_bias) {
      vec(p + "attn_q.bias", permute ? permute_qk_vector(L.bq, s.heads, s.head_dim) : L.bq);
      vec(p + "attn_k.bias", permute ? permute_qk_vector(L.bk, s.kv_heads, s.head_dim) : L.bk);
      vec(p + "attn_v.bias", L.bv);
    }
    vec(p + "ffn_norm.weight", L.ffn_norm);
    if (fused) {
      matrix(p + "ffn_up.weight", concat(L.gate, L.up), 2 * F, H);  // gate rows first
    } else {
      matrix(p + "ffn_gate.weight", L.gate, F, H);
      matrix(p + "ffn_up.weight", L.up, F, H);
    }
    matrix(p + "ffn_down.weight", L.down, H, F);
    if (!L.q_norm.empty()) {
      vec(p + "attn_q_norm.weight", L.q_norm);
      vec(p + "attn_k_norm.weight", L.k_norm);
    }
    if (gemma) {
      vec(p + "post_attention_norm.weight", L.post_attn_norm);
      vec(p + "post_ffw_norm.weight", L.post_ffn_norm);
    }
  }
  return g.write(path);
}

Status write_tiny_hf_dir(const TinyModelSpec& s, const std::string& dir) {
  if (Status st = check_spec(s); !st.ok()) return st;
  if (s.arch != Architecture::Llama) return Error{"tiny model: only Llama-family specs have an HF directory"};
  if (s.hf_matrix_type != TensorType::F32 && s.hf_matrix_type != TensorType::F16 &&
      s.hf_matrix_type != TensorType::BF16) {
    return Error{"tiny model: hf_matrix_type must be F32, F16 or BF16"};
  }
  if (s.hf_num_shards < 1) return Error{"tiny model: hf_num_shards must be at least 1"};
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{fmt::format("{}: cannot create: {}", dir, ec.message())};

  const TinyWeights w = make_weights(s);
  const TinyVocab vocab = make_vocab(s.vocab);
  const bool qwen = s.qkv_bias;
  const int64_t H = s.hidden, F = s.ffn, Q = int64_t{s.heads} * s.head_dim, KV = int64_t{s.kv_heads} * s.head_dim;

  // Tensors, in the order transformers saves them.
  std::vector<SafetensorsEntry> tensors;
  auto matrix = [&](const std::string& name, const std::vector<float>& m, int64_t rows, int64_t cols) {
    tensors.push_back({name, dtype_name(s.hf_matrix_type), {rows, cols}, matrix_bytes(s.hf_matrix_type, m, cols)});
  };
  auto vec = [&](const std::string& name, const std::vector<float>& v) {
    tensors.push_back({name, "F32", {static_cast<int64_t>(v.size())}, quantize_row(TensorType::F32, v.data(),
                                                                                  static_cast<int64_t>(v.size()))});
  };
  matrix("model.embed_tokens.weight", w.embed, s.vocab, H);
  for (int i = 0; i < s.layers; ++i) {
    const TinyLayer& L = w.layers[static_cast<size_t>(i)];
    const std::string p = fmt::format("model.layers.{}.", i);
    vec(p + "input_layernorm.weight", L.attn_norm);
    matrix(p + "self_attn.q_proj.weight", L.wq, Q, H);
    matrix(p + "self_attn.k_proj.weight", L.wk, KV, H);
    matrix(p + "self_attn.v_proj.weight", L.wv, KV, H);
    matrix(p + "self_attn.o_proj.weight", L.wo, H, Q);
    if (qwen) {
      vec(p + "self_attn.q_proj.bias", L.bq);
      vec(p + "self_attn.k_proj.bias", L.bk);
      vec(p + "self_attn.v_proj.bias", L.bv);
    }
    vec(p + "post_attention_layernorm.weight", L.ffn_norm);
    matrix(p + "mlp.gate_proj.weight", L.gate, F, H);
    matrix(p + "mlp.up_proj.weight", L.up, F, H);
    matrix(p + "mlp.down_proj.weight", L.down, H, F);
  }
  vec("model.norm.weight", w.final_norm);
  if (!s.tied) matrix("lm_head.weight", w.lm_head, s.vocab, H);

  const std::map<std::string, std::string> meta = {{"format", "pt"}};
  if (s.hf_num_shards == 1) {
    if (Status st = write_bytes(fs::path(dir) / "model.safetensors", build_safetensors(tensors, meta)); !st.ok()) {
      return st;
    }
  } else {
    ordered_json weight_map = ordered_json::object();
    size_t total = 0;
    const size_t per_shard = (tensors.size() + s.hf_num_shards - 1) / s.hf_num_shards;
    for (int k = 0; k < s.hf_num_shards; ++k) {
      const std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, s.hf_num_shards);
      const size_t begin = std::min(tensors.size(), k * per_shard);
      const size_t end = std::min(tensors.size(), begin + per_shard);
      const std::vector<SafetensorsEntry> part(tensors.begin() + begin, tensors.begin() + end);
      for (const SafetensorsEntry& e : part) {
        weight_map[e.name] = name;
        total += e.bytes.size();
      }
      if (Status st = write_bytes(fs::path(dir) / name, build_safetensors(part, meta)); !st.ok()) return st;
    }
    const ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    if (Status st = write_text(fs::path(dir) / "model.safetensors.index.json", index.dump(2)); !st.ok()) return st;
  }

  ordered_json config = {
      {"architectures", ordered_json::array({qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM"})},
      {"model_type", qwen ? "qwen2" : "llama"},
      {"hidden_size", s.hidden},
      {"intermediate_size", s.ffn},
      {"num_hidden_layers", s.layers},
      {"num_attention_heads", s.heads},
      {"num_key_value_heads", s.kv_heads},
      {"head_dim", s.head_dim},
      {"hidden_act", "silu"},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 10000.0},
      {"rope_scaling", nullptr},
      {"max_position_embeddings", s.context_length},
      {"vocab_size", s.vocab},
      {"tie_word_embeddings", s.tied},
      {"bos_token_id", kTinyEndOfText},
      {"eos_token_id", kTinyEndOfText},
      {"torch_dtype", s.hf_matrix_type == TensorType::F32 ? "float32"
                      : s.hf_matrix_type == TensorType::F16 ? "float16" : "bfloat16"},
  };
  if (qwen) config["use_sliding_window"] = false;
  if (Status st = write_text(fs::path(dir) / "config.json", config.dump(2)); !st.ok()) return st;

  // tokenizer.json: byte-level BPE; specials (and padding) as added tokens.
  ordered_json vocab_json = ordered_json::object();
  ordered_json added = ordered_json::array();
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    if (vocab.types[id] == 3) {
      added.push_back({{"id", id}, {"content", vocab.tokens[id]}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", true}});
    } else {
      vocab_json[vocab.tokens[id]] = id;
    }
  }
  ordered_json merges = ordered_json::array();
  for (const auto& [x, y] : vocab.merges) merges.push_back(ordered_json::array({x, y}));
  const ordered_json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                         {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"byte_fallback", false},
                 {"vocab", vocab_json}, {"merges", merges}}},
  };
  if (Status st = write_text(fs::path(dir) / "tokenizer.json", tokenizer.dump(2)); !st.ok()) return st;
  const ordered_json tokenizer_config = {
      {"add_bos_token", s.add_bos},
      {"bos_token", "<|endoftext|>"},
      {"eos_token", "<|endoftext|>"},
      {"model_max_length", s.context_length},
      {"chat_template", kChatMlTemplate},
  };
  return write_text(fs::path(dir) / "tokenizer_config.json", tokenizer_config.dump(2));
}

}  // namespace kvscope::test
