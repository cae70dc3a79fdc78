// Builds a ModelConfig and ModelWeights from a GGUF file (architectures
// "llama", "mistral", "qwen2" and "gemma3"), checking every tensor's presence,
// type and shape first so that a bad file gives one clear message instead of
// a crash in the forward pass.
#pragma once

#include <memory>

#include "kvscope/result.h"
#include "model/gguf_file.h"
#include "model/model_weights.h"

namespace kvscope {

Result<ModelConfig> read_model_config(const GgufFile& file);

// The returned weights keep `file` alive.
Result<std::shared_ptr<const ModelWeights>> load_gguf_weights(std::shared_ptr<const GgufFile> file);

}  // namespace kvscope
