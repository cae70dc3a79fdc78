// ModelInfo: what front ends show about the loaded model (plain values).
#pragma once

#include <cstdint>
#include <string>

namespace kvscope {

struct ModelInfo {
  std::string path;
  std::string name;
  std::string architecture;  // "llama", "gemma3", ...
  int32_t num_layers = 0;
  int32_t hidden_size = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  size_t weight_bytes = 0;     // matrices read per decode step
  size_t kv_bytes_per_token = 0;
  size_t kv_pool_bytes = 0;    // the KV pool as allocated (num_kv_blocks blocks)
  size_t swap_pool_bytes = 0;  // host swap space for PreemptionMode::Swap (0: none)
  size_t workspace_bytes = 0;  // activation and scratch buffers of the model runner
  int32_t num_kv_blocks = 0;
  int32_t block_size = 0;
  std::string chat_template_family;  // "chatml", "gemma", ...
};

}  // namespace kvscope
