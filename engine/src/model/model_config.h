// ModelConfig: the numbers and switches that define one architecture instance.
// Filled by a loader (GGUF metadata or a Hugging Face config.json); read by the
// model runner. Everything the forward pass branches on lives here, so the two
// architectures (Llama family, Gemma 2 and 3) share one forward implementation.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/rope_style.h"

namespace kvscope {

enum class Architecture { Llama, Gemma2, Gemma3 };

enum class FfnActivation { SiLU, GeluTanh };

struct ModelConfig {
  Architecture arch = Architecture::Llama;
  std::string name;  // general.name or the directory name

  int32_t num_layers = 0;
  int32_t hidden_size = 0;   // n_embd
  int32_t ffn_size = 0;      // intermediate size
  int32_t num_heads = 0;     // query heads
  int32_t num_kv_heads = 0;  // key/value heads (grouped-query attention)
  int32_t head_dim = 0;      // per head; Gemma 3 270M: 256, not hidden/heads
  int32_t vocab_size = 0;
  int32_t context_length = 0;  // trained maximum

  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;        // global layers
  float rope_base_local = 10000.0f;  // sliding-window layers (Gemma 3)
  RopeStyle rope_style = RopeStyle::kAdjacentPairs;

  // Sliding-window attention: a key is invisible when q_pos - k_pos >= window.
  // Layer l is global when (l % sliding_window_pattern) == pattern - 1.
  int32_t sliding_window = 0;          // 0: every layer is global
  int32_t sliding_window_pattern = 0;  // 0: every layer is global

  bool qkv_bias = false;     // Qwen2-style biases on Q, K, V
  bool qk_norm = false;      // per-head RMSNorm on Q and K (Gemma 3, Qwen3)
  bool post_norms = false;   // RMSNorm after attention and after FFN (Gemma 3)
  float embedding_scale = 1.0f;  // Gemma: sqrt(hidden_size)
  float attn_scale = 0.0f;       // softmax scale; 0 means 1/sqrt(head_dim)
  // Gemma 2's soft-capping, x -> cap * tanh(x / cap) (0: off): of the scaled
  // attention scores before the softmax, and of the output logits.
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  FfnActivation activation = FfnActivation::SiLU;

  bool layer_is_sliding(int32_t layer) const {
    if (sliding_window <= 0 || sliding_window_pattern <= 0) return false;
    return (layer % sliding_window_pattern) != sliding_window_pattern - 1;
  }
  float layer_rope_base(int32_t layer) const {
    return layer_is_sliding(layer) ? rope_base_local : rope_base;
  }
  float softmax_scale() const;
  int32_t q_size() const { return num_heads * head_dim; }
  int32_t kv_size() const { return num_kv_heads * head_dim; }
};

}  // namespace kvscope
