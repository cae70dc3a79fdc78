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

// Errors name the file. Besides the formats' own checks: a vocabulary with
// more tokens than the embedding has rows, or, in a GGUF file, any other
// count (llama.cpp's converter pads the token list to the rows, and llama.cpp
// refuses a file where they differ: the ids past the list would be sampled
// and show no text). A Hugging Face embedding may have more rows than the
// tokenizer has tokens (padded for the GPU).
Result<LoadedModel> load_model(const std::string& path);

}  // namespace kvscope
