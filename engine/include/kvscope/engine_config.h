// EngineConfig: every knob of the engine that is fixed while it runs.
#pragma once

#include <cstdint>
#include <string>

#include "kvscope/result.h"

namespace kvscope {

struct EngineConfig {
  std::string model_path;          // a .gguf file
  int32_t num_threads = 0;         // 0: one per available core
  int32_t block_size = 16;         // token slots per KV block, 1..2048
  int64_t kv_budget_bytes = 512ll << 20;  // memory for the KV pool; ignored when num_blocks > 0
  int32_t num_blocks = 0;          // exact pool size when > 0
  int32_t max_seqs = 64;           // sequences in one step
  int32_t max_batched_tokens = 512;  // query rows in one step (prefill is chunked to fit)
  int32_t max_model_len = 0;       // 0: the model's trained context length

  // Checks ranges; the message names the field and the allowed range.
  Status validate() const;
};

}  // namespace kvscope
