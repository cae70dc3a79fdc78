// Hugging Face model directories -> ModelWeights + VocabData, so a directory
// with config.json, *.safetensors and tokenizer files runs like a GGUF file.
//
// Supported: LlamaForCausalLM, MistralForCausalLM and Qwen2ForCausalLM with
// F32, F16 or BF16 weights. Linear weights are [out_features, in_features]
// row-major, which is WeightMatrix's layout (num_rows = out): matrices stay
// views into the mapped shards. Q/K rows are in Hugging Face order, so rope is
// RopeStyle::kHalfSplit (GGUF llama files permute them and use adjacent pairs).
//
// Tests: tests/engine/model/hf_model_test.cpp (an HF directory and a GGUF of
// the same random tiny model give the same logits).
#pragma once

#include <memory>
#include <string>

#include "kvscope/result.h"
#include "model/model_weights.h"
#include "tokenizer/vocab_data.h"

namespace kvscope {

struct HfModel {
  std::shared_ptr<const ModelWeights> weights;  // keeps the mapped shards alive
  VocabData vocab;
  std::string architecture;  // "llama", "mistral" or "qwen2" (GGUF-style name)
};

// Whether `path` should be loaded as a Hugging Face model: it is a directory
// (GGUF models are single files). A directory without config.json still counts,
// so that load_hf_directory can say what is missing.
bool is_hf_directory(const std::string& path);

// Reads config.json into a ModelConfig (no tensors), and the architecture's
// GGUF-style name ("llama", "mistral", "qwen2") into `architecture` when given.
// Errors name the file and the key, or the unsupported architecture / rope scaling.
Result<ModelConfig> read_hf_config(const std::string& dir, std::string* architecture = nullptr);

// Loads config.json, every tensor (checked for presence, dtype and shape) and
// the tokenizer (tokenizer.json or tokenizer.model, tokenizer_config.json).
Result<HfModel> load_hf_directory(const std::string& dir);

}  // namespace kvscope
