// load_model: a Hugging Face directory (config.json + safetensors) or a GGUF
// file, to weights + vocabulary, whatever the format.
#pragma once

#include <memory>
#include <string>

#include "kvscope/result.h"
#include "kvscope/sampling_defaults.h"
#include "model/model_weights.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

struct LoadedModel {
  std::shared_ptr<const ModelWeights> weights;  // keeps its file(s) alive
  VocabData vocab;
  std::string architecture;  // for ModelInfo: "llama", "qwen2", "gemma3", ...
  RecommendedSampling sampling;  // for ModelInfo: general.sampling.* or generation_config.json
};

Result<LoadedModel> load_model(const std::string& path);

}  // namespace kvscope
