// Random tiny models for tests: the same seeded weights written as a GGUF file
// (write_tiny_gguf) and as a Hugging Face safetensors directory
// (write_tiny_hf_dir), both with a small byte-level BPE vocabulary and a
// ChatML template, so that Engine::create loads either end to end and the two
// can be compared logit for logit.
//
//   TinyModelSpec spec;            // Llama, 2 layers, hidden 64, F32
//   ASSERT_TRUE(write_tiny_gguf(spec, dir + "/tiny.gguf").ok());
//   ASSERT_TRUE(write_tiny_hf_dir(spec, dir + "/tiny-hf").ok());
//
// Weights are drawn in Hugging Face order; the GGUF llama file gets Q and K
// rows permuted per head as llama.cpp's converter does (HF row i of a head ->
// GGUF row (i % (head_dim/2)) * 2 + i / (head_dim/2)), so adjacent-pair rope on
// the GGUF equals half-split rope on the HF weights. With qkv_bias the model
// is written as Qwen2 (GGUF "qwen2", no permutation; HF Qwen2ForCausalLM).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/tensor_type.h"
#include "kvscope/result.h"
#include "model/model_config.h"

namespace kvscope::test {

struct TinyModelSpec {
  Architecture arch = Architecture::Llama;  // Llama, Gemma2 or Gemma3
  int layers = 2;
  int hidden = 64;
  int ffn = 128;
  int heads = 4;
  int kv_heads = 2;
  int head_dim = 16;
  int vocab = 300;  // >= 259: 256 byte tokens + 3 specials, then merges, then padding
  // GGUF type of every 2-D weight: F32, F16, BF16, Q8_0 or Q4_1. Quantised
  // values are what both files hold (the HF directory stores them dequantised).
  TensorType matrix_type = TensorType::F32;
  bool tied = true;
  bool qkv_bias = false;  // Qwen2-style biases on Q, K, V (Llama only)
  // Llama-family variants in the GGUF ("": llama, or qwen2 with qkv_bias):
  // "qwen3" (per-head Q/K norms), "phi3" (fused attn_qkv and gate|up ffn_up).
  std::string family;
  bool rope_freqs = false;
  // tokenizer.ggml.pre; llama.cpp refuses "gpt2" (its name is "gpt-2"), so
  // files llama.cpp must load use "default".
  std::string tokenizer_pre = "gpt2";  // write rope_freqs.weight (Llama 3.x rope scaling), factors in [1, 8]
  uint32_t seed = 1;
  int context_length = 512;
  int sliding_window = 0;  // Gemma 3: 0 writes no key (the loader's default, 512)
  bool add_bos = false;    // the vocabulary asks for BOS (<|endoftext|>) before a prompt
  // GGUF only: extra metadata keys (e.g. general.sampling.temp, general.sampling.top_k),
  // written last: one of the shape's keys given here replaces the shape's value.
  std::map<std::string, float> gguf_f32;
  std::map<std::string, uint32_t> gguf_u32;
  std::map<std::string, std::string> gguf_str;  // e.g. tokenizer.chat_template
  // GGUF only: > 0 writes just the first gguf_num_tokens tokens (and their
  // types) while the embedding keeps `vocab` rows: a file whose vocabulary
  // disagrees with its weights.
  int gguf_num_tokens = 0;

  // Hugging Face directory only: dtype of the 2-D weights (F32, F16 or BF16;
  // equal to the GGUF values when it can represent them: F32 always, F16/BF16
  // when matrix_type is the same) and the number of shards (1: model.safetensors).
  TensorType hf_matrix_type = TensorType::F32;
  int hf_num_shards = 1;
};

// Ids in the tiny vocabulary.
inline constexpr int32_t kTinyEndOfText = 256;  // <|endoftext|>: bos and eos
inline constexpr int32_t kTinyImStart = 257;    // <|im_start|>
inline constexpr int32_t kTinyImEnd = 258;      // <|im_end|>

Status write_tiny_gguf(const TinyModelSpec& spec, const std::string& path);
// A tiny model tensor parallelism splits every way the tests need: 6 query
// heads over 3 KV heads of 32 (tp 2: 1 + 2 KV heads, uneven; tp 4: KV heads
// copied), hidden 96, an FFN of 256 (8 blocks of 32).
TinyModelSpec tensor_parallel_tiny_spec(TensorType matrix_type = TensorType::F32);
// A temporary path for a suite's tiny model, "kvscope_<suite>_tiny_<pid>.gguf":
// one file per process, because ctest runs each test of a suite as its own
// process, in parallel, and a shared path would be rewritten under a reader.
std::string tiny_model_temp_path(const std::string& suite);
// Creates `dir` if needed; Gemma3 specs are refused (kvscope loads Llama-family
// HF directories only).
Status write_tiny_hf_dir(const TinyModelSpec& spec, const std::string& dir);

// The tiny quantiser: `n` values (a multiple of the block size) -> the bytes
// of `type` (F32, F16, BF16, Q8_0, Q4_1; layouts: docs/model-formats.md).
std::vector<uint8_t> quantize_row(TensorType type, const float* src, int64_t n);

// One tensor of a hand-built safetensors file; `dtype` is written as given.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// A valid safetensors file: header padded with spaces to 8 bytes, tensors
// packed in order.
std::vector<uint8_t> build_safetensors(const std::vector<SafetensorsEntry>& tensors,
                                       const std::map<std::string, std::string>& metadata = {});

}  // namespace kvscope::test
