// ModelInfo: what front ends show about the loaded model (plain values).
#pragma once

#include <cstdint>
#include <string>

#include "kvscope/rank_memory.h"
#include "kvscope/sampling_defaults.h"
#include <vector>

namespace kvscope {

struct ModelInfo {
  std::string path;
  std::string name;
  std::string architecture;  // "llama", "gemma3", ...
  int32_t num_layers = 0;
  int32_t hidden_size = 0;
  int32_t ffn_size = 0;  // intermediate size of the MLP
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t vocab_size = 0;
  int32_t context_length = 0;  // the model's trained context
  // The longest context a sequence may reach under the engine's settings
  // (EngineConfig::max_model_len as resolved: the setting, else
  // context_length). Follows Engine::reconfigure.
  int32_t max_model_len = 0;
  size_t weight_bytes = 0;     // matrices read per decode step
  // Every weight the engine holds: weight_bytes plus the embedding table
  // where it is not also the head, and the norms and biases (model-info's
  // "weights": what the model file's tensors add up to).
  size_t weight_memory_bytes = 0;
  size_t kv_bytes_per_token = 0;  // K and V, every layer, in the cache type (EngineConfig::kv_cache_type)
  // The memory below follows Engine::reconfigure. The pools are calloc'd: pages
  // count against the process only once written.
  size_t kv_pool_bytes = 0;    // the KV pool as allocated: num_kv_blocks * block_size * kv_bytes_per_token
  // Host swap space as allocated: whole blocks of swap_space_bytes with
  // PreemptionMode::Swap; 0 with Recompute (no swap pool is allocated then).
  size_t swap_pool_bytes = 0;
  // The model runners' activation buffers (sized for max_batched_tokens rows;
  // one runner per tensor-parallel rank, tensor_parallel.ranks[r].workspace_bytes
  // each) plus the logits buffer (kv_plan.h, logits_buffer_floats: a row per
  // sampled token, and the rows a step may score), and whatever
  // a rank's collectives have sized since (kvscope/kv_plan.h). Not counted:
  // the matmul kernels' quantised copy of their input, a few percent of this.
  size_t workspace_bytes = 0;
  int32_t num_kv_blocks = 0;
  int32_t block_size = 0;
  // What runs the model (EngineConfig::backend as choose_backend resolved
  // it; follows Engine::reconfigure).
  std::string backend;         // "cpu" or "cuda"
  std::string backend_reason;  // "CPU: this build has no CUDA backend (built with KVSCOPE_CUDA=OFF)"
  std::string device_name;     // "CPU (AMD EPYC 7B13)", "NVIDIA H100 80GB HBM3"
  // The GPU's memory on the CUDA backend (0 on the CPU): its size, and what
  // was free for this engine when the pool was last planned (free then, plus
  // what this engine already held there). weight_bytes, kv_pool_bytes and
  // workspace_bytes above are then device memory.
  size_t device_total_bytes = 0;
  size_t device_free_bytes = 0;
  // How tp splits the model and the pool between ranks (one rank when tp = 1);
  // follows Engine::reconfigure like the sizes above.
  TensorParallelMemory tensor_parallel;
  std::string chat_template_family;  // "chatml", "gemma", ...
  // What the model file recommends for sampling; resolve_sampling_defaults()
  // layers it over kvscope's defaults (kvscope/sampling_defaults.h).
  RecommendedSampling recommended_sampling;
  // What a person should know about the settings in force that is not an
  // error (Engine::warnings(); follows Engine::reconfigure).
  std::vector<std::string> setting_warnings;
};

}  // namespace kvscope
