// ModelWeights: views of every weight the forward pass reads, by layer.
// Matrices stay in their file's type and place (mmap) until a backend copies
// them (the CPU backend's packed weights, the GPU's device copies), after
// which no step reads the mapping; only small vectors (norm weights, biases)
// are converted to f32 at load time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/tensor_type.h"
#include "model/model_config.h"

namespace kvscope {

// A 2-D weight: num_rows rows of row_len elements, each row contiguous.
// An output element is dot(row, input) — nothing is transposed (docs/model-formats.md).
struct WeightMatrix {
  TensorType type = TensorType::F32;
  const void* data = nullptr;
  int64_t num_rows = 0;
  int64_t row_len = 0;

  bool present() const { return data != nullptr; }
  size_t num_bytes() const { return num_rows * row_bytes(type, row_len); }
};

struct LayerWeights {
  std::vector<float> attn_norm;        // [hidden]
  WeightMatrix wq, wk, wv, wo;         // [q_size x hidden], [kv x hidden] x2, [hidden x q_size]
  std::vector<float> bq, bk, bv;       // optional biases (Qwen2): [q_size], [kv], [kv]
  std::vector<float> q_norm, k_norm;   // optional per-head norms (Gemma 3): [head_dim]
  std::vector<float> post_attn_norm;   // optional (Gemma 3): [hidden]
  std::vector<float> ffn_norm;         // [hidden]
  WeightMatrix w_gate, w_up, w_down;   // [ffn x hidden] x2, [hidden x ffn]
  std::vector<float> post_ffn_norm;    // optional (Gemma 3): [hidden]
};

struct ModelWeights {
  ModelConfig config;
  WeightMatrix token_embd;  // [vocab x hidden]
  WeightMatrix output;      // [vocab x hidden]; the embedding itself when tied
  std::vector<float> output_norm;
  std::vector<LayerWeights> layers;
  // Llama 3.x rope scaling: [head_dim / 2] divisors of the rotation
  // frequencies (GGUF rope_freqs.weight); empty when the model has none.
  std::vector<float> rope_freq_factors;
  // Keeps the memory behind the WeightMatrix pointers alive (a mapping, or
  // buffers owned by a loader).
  std::shared_ptr<const void> backing;
  // Drops this process's resident pages of the mapped file(s) behind the
  // matrices (MappedFile::release_resident_pages); unset when nothing is
  // mapped. Called once the backends hold their own copies.
  std::function<void()> release_file_pages;

  size_t matrix_bytes() const;  // bytes of all matrices (what decode reads per step)
  // Bytes of every weight held: the matrices, the embedding table where it
  // is not also the head, and the norm, bias and rope vectors, as f32 (what
  // a GGUF file's tensors add up to, as model-info counts them; a Hugging
  // Face directory's 16-bit norms count twice their file size here).
  size_t held_bytes() const;
};

}  // namespace kvscope
