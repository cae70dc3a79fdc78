#include "support/tiny_families.h"

#include <fstream>
#include <iterator>

namespace kvscope::test {

std::vector<TinyFamilyCase> tiny_family_cases() {
  std::vector<TinyFamilyCase> cases;
  auto base = [](uint32_t seed) {
    TinyModelSpec s;
    s.layers = 2;
    s.hidden = 64;
    s.ffn = 96;
    s.heads = 4;
    s.kv_heads = 2;
    s.head_dim = 16;
    s.matrix_type = TensorType::F32;  // no quantisation noise: the comparison is of the forward pass alone
    s.tied = false;
    s.seed = seed;
    s.tokenizer_pre = "default";  // one llama.cpp accepts
    return s;
  };
  cases.push_back({"llama", base(11)});
  TinyModelSpec qwen2 = base(12);
  qwen2.qkv_bias = true;
  cases.push_back({"qwen2", qwen2});
  TinyModelSpec qwen3 = base(13);
  qwen3.family = "qwen3";
  qwen3.head_dim = 32;  // Q is 128 wide on a 64-wide model, as in Qwen3 (key_length != hidden / heads)
  cases.push_back({"qwen3", qwen3});
  TinyModelSpec phi3 = base(14);
  phi3.family = "phi3";
  cases.push_back({"phi3", phi3});
  TinyModelSpec llama31 = base(15);
  llama31.rope_freqs = true;
  cases.push_back({"llama31", llama31});
  TinyModelSpec gemma2 = base(16);
  gemma2.arch = Architecture::Gemma2;
  gemma2.tied = true;  // llama.cpp's gemma2 always uses the embedding as the head
  gemma2.sliding_window = 16;  // the 40 positions reach past it on the sliding (even) layers
  // Caps small enough to bend these scores and logits (Gemma 2 ships 50 and
  // 30, which would leave a random tiny model's values almost untouched).
  gemma2.gguf_f32["gemma2.attn_logit_softcapping"] = 2.0f;
  gemma2.gguf_f32["gemma2.final_logit_softcapping"] = 3.0f;
  cases.push_back({"gemma2", gemma2});
  return cases;
}

std::vector<int32_t> tiny_family_tokens() {
  // Ordinary ids of the tiny vocabulary (bytes and merges), no specials;
  // positions up to 39, where scaled and unscaled rotations differ clearly.
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 40; ++i) ids.push_back((i * 37 + 11) % 250);
  return ids;
}

uint64_t fnv1a64_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::istreambuf_iterator<char> it(in), end; it != end; ++it) {
    h ^= static_cast<uint8_t>(*it);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace kvscope::test
