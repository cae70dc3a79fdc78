// Model files without an Engine: what a GGUF file or a Hugging Face model
// directory holds (inspect_model_file,
// for `kvscope-cli model-info` and the GUI's model picker) and its tokenizer
// alone (TextTokenizer, for `kvscope-cli tokenize`; works on vocabulary-only
// files). Neither loads weights nor sizes a KV pool.
//
// Tests: tests/app/model_file_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvscope/kv_plan.h"
#include "kvscope/result.h"

namespace kvscope {

// One entry of the tensor table.
struct TensorSummary {
  std::string name;
  std::string type;           // "Q4_1", "F32", ... (GGUF type names)
  std::vector<int64_t> dims;  // [n_dims], dims[0] is the contiguous row length
  int64_t num_elements = 0;
  uint64_t num_bytes = 0;
};

// All tensors of one type.
struct TensorTypeTotal {
  std::string type;
  int32_t num_tensors = 0;
  int64_t num_elements = 0;
  uint64_t num_bytes = 0;
};

// The architecture numbers the engine would run with (its ModelConfig, as values).
struct ModelFileConfig {
  std::string architecture;  // general.architecture: "llama", "gemma3", ...
  std::string name;
  int32_t num_layers = 0;
  int32_t hidden_size = 0;
  int32_t ffn_size = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t vocab_size = 0;
  int32_t context_length = 0;

  // The numbers plan_kv needs (kv_plan.h).
  ModelShape shape() const;
};

struct ModelFileSummary {
  std::string path;
  std::string format;          // "GGUF" or "safetensors" (a Hugging Face directory)
  uint32_t gguf_version = 0;   // 0 for a directory
  uint64_t file_size = 0;      // a directory: its safetensors files together
  int32_t num_files = 1;       // a directory: its safetensors shards
  // GGUF: key, short rendering, file order; a directory: config.json's keys.
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<std::string> warnings;                          // accepted oddities of the file
  std::vector<TensorSummary> tensors;                         // file order
  std::vector<TensorTypeTotal> totals_by_type;                // largest first

  // Set when the architecture is supported and its keys are valid; otherwise
  // config_error says why (the rest of the summary is still filled).
  std::optional<ModelFileConfig> config;
  std::string config_error;
  // Set when the configuration reads but the model would not load: what
  // Engine::create would say (a tensor missing or of the wrong shape or
  // type, a tokenizer kvscope cannot build, a vocabulary that disagrees with
  // the embedding). Empty without a config.
  std::string load_error;

  uint64_t weight_bytes = 0;    // all tensor data
  int64_t num_parameters = 0;   // all tensor elements
  // f32 K and V for every layer: 2 * layers * kv_heads * head_dim * 4; 0 without a config.
  uint64_t kv_bytes_per_token = 0;
  // weight_bytes + KV for config->context_length tokens (weight_bytes without a config).
  uint64_t memory_bytes_full_context = 0;

  // weight_bytes + KV for `num_tokens` tokens.
  uint64_t memory_bytes(int64_t num_tokens) const {
    return weight_bytes + kv_bytes_per_token * static_cast<uint64_t>(num_tokens < 0 ? 0 : num_tokens);
  }
};

// Opens and validates a GGUF file, or a Hugging Face directory's config.json
// and safetensors headers (no weights are read), and summarises it. Errors:
// the file cannot be read or is not valid GGUF / safetensors (the message
// names the problem). A directory whose config.json kvscope cannot run still
// gets a summary, with config_error saying why; a model whose configuration
// reads is loaded as Engine::create loads it (weights as views of the
// mapping, the tokenizer built), and load_error says why it would not.
Result<ModelFileSummary> inspect_model_file(const std::string& path);

// The tokenizer of a GGUF file, without the model.
class TextTokenizer {
 public:
  // Reads the tokenizer.* keys of a GGUF file (tensors are not needed), or a
  // Hugging Face model directory's tokenizer files (no weights are read).
  static Result<std::unique_ptr<TextTokenizer>> open(const std::string& path);
  ~TextTokenizer();
  TextTokenizer(const TextTokenizer&) = delete;
  TextTokenizer& operator=(const TextTokenizer&) = delete;

  // Text -> ids. parse_special: control tokens written literally
  // ("<|im_start|>") become their ids. add_bos: start with BOS when the
  // vocabulary has one and asks for it (tokenizer.ggml.add_bos_token), as the
  // engine does for a prompt. Text with no token of its own is replaced
  // (never by a control token); `warning`, when given, then says what was
  // replaced, else it is set to "".
  std::vector<int32_t> encode(std::string_view text, bool parse_special, bool add_bos,
                              std::string* warning = nullptr) const;
  // The token's text as stored in the vocabulary ("Ġthe", "▁the", "<s>"); "" when out of range.
  std::string piece(int32_t id) const;
  // Ids -> text; control tokens are hidden, out-of-range ids give nothing, and
  // the space a SentencePiece vocabulary puts before the text is removed, so
  // that decode(encode(text)) == text.
  std::string decode(const std::vector<int32_t>& ids) const;

  int32_t vocab_size() const;
  int32_t bos_id() const;  // -1 when none
  int32_t eos_id() const;  // -1 when none

 private:
  struct Impl;
  explicit TextTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvscope
