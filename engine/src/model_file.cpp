// inspect_model_file and TextTokenizer: the public model-file API
// (kvscope/model_file.h) over GgufFile, read_model_config and the tokenizer.
#include "kvscope/model_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "model/hf_model_loader.h"
#include "model/model_loader.h"
#include "model/safetensors_file.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::Llama: return "llama";
    case Architecture::Gemma2: return "gemma2";
    case Architecture::Gemma3: return "gemma3";
  }
  return "llama";
}

ModelFileConfig to_public(const ModelConfig& c, std::string architecture) {
  ModelFileConfig out;
  out.architecture = std::move(architecture);
  out.name = c.name;
  out.num_layers = c.num_layers;
  out.hidden_size = c.hidden_size;
  out.ffn_size = c.ffn_size;
  out.num_heads = c.num_heads;
  out.num_kv_heads = c.num_kv_heads;
  out.head_dim = c.head_dim;
  out.vocab_size = c.vocab_size;
  out.context_length = c.context_length;
  return out;
}

// The tensors' table and totals, from (name, type, GGUF-order dims, bytes).
void add_tensor(ModelFileSummary& s, std::map<std::string, TensorTypeTotal>& by_type, TensorSummary ts) {
  TensorTypeTotal& total = by_type[ts.type];
  total.type = ts.type;
  total.num_tensors += 1;
  total.num_elements += ts.num_elements;
  total.num_bytes += ts.num_bytes;
  s.weight_bytes += ts.num_bytes;
  s.num_parameters += ts.num_elements;
  s.tensors.push_back(std::move(ts));
}

void finish_totals(ModelFileSummary& s, const std::map<std::string, TensorTypeTotal>& by_type) {
  for (const auto& [name, total] : by_type) s.totals_by_type.push_back(total);
  std::stable_sort(s.totals_by_type.begin(), s.totals_by_type.end(),
                   [](const TensorTypeTotal& a, const TensorTypeTotal& b) { return a.num_bytes > b.num_bytes; });
}

void set_config(ModelFileSummary& s, const Result<ModelConfig>& config, std::string architecture) {
  s.memory_bytes_full_context = s.weight_bytes;
  if (!config.ok()) {
    s.config_error = config.error();
    return;
  }
  s.config = to_public(*config, std::move(architecture));
  s.kv_bytes_per_token = static_cast<uint64_t>(s.config->shape().kv_bytes_per_token());
  s.memory_bytes_full_context = s.memory_bytes(config->context_length);
}

// A Hugging Face directory: config.json's keys as the metadata, the
// safetensors headers as the tensors (dims in GGUF order, the contiguous one
// first, so both formats read alike).
Result<ModelFileSummary> inspect_hf_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  auto checkpoint = SafetensorsCheckpoint::open_dir(dir);
  if (!checkpoint.ok()) return Error{checkpoint.error()};
  ModelFileSummary s;
  s.path = dir;
  s.format = "safetensors";
  s.num_files = static_cast<int32_t>((*checkpoint)->files().size());
  std::map<std::string, TensorTypeTotal> by_type;
  for (const auto& file : (*checkpoint)->files()) {
    std::error_code ec;
    s.file_size += fs::file_size(file->path(), ec);
    for (const SafetensorsTensor& t : file->tensors()) {
      TensorSummary ts;
      ts.name = t.name;
      ts.type = std::string(safetensors_dtype_name(t.dtype));
      ts.dims.assign(t.shape.rbegin(), t.shape.rend());
      ts.num_elements = t.num_elements();
      ts.num_bytes = t.num_bytes;
      add_tensor(s, by_type, std::move(ts));
    }
  }
  finish_totals(s, by_type);
  // config.json's keys (read_hf_config below says what is wrong with it, if anything).
  std::ifstream in(fs::path(dir) / "config.json", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    constexpr size_t kShort = 80;
    for (const auto& [key, value] : j.items()) {
      std::string shown = value.dump();
      if (shown.size() > kShort) shown = shown.substr(0, kShort - 3) + "...";
      s.metadata.emplace_back(key, std::move(shown));
    }
  }
  std::string architecture;
  Result<ModelConfig> config = read_hf_config(dir, &architecture);
  if (config.ok() && config->name.empty()) config->name = fs::path(dir).filename().string();
  set_config(s, config, architecture);
  return s;
}

// What Engine::create says of the model at `path` before it sizes anything:
// empty when the weights and the tokenizer load.
std::string load_problem(const std::string& path) {
  auto model = load_model(path);
  if (!model.ok()) return model.error();
  auto tokenizer = create_tokenizer(model->vocab);
  if (!tokenizer.ok()) return fmt::format("{}: {}", path, tokenizer.error());
  return {};
}

// The summary of what the file says, without loading the model.
Result<ModelFileSummary> inspect_file_alone(const std::string& path) {
  if (is_hf_directory(path)) return inspect_hf_directory(path);
  auto opened = GgufFile::open(path);
  if (!opened.ok()) return Error{opened.error()};
  const GgufFile& file = **opened;

  ModelFileSummary s;
  s.path = path;
  s.format = "GGUF";
  s.gguf_version = file.version();
  s.file_size = file.file_size();
  s.metadata = file.describe_metadata();
  s.warnings = file.warnings();

  std::map<std::string, TensorTypeTotal> by_type;
  s.tensors.reserve(file.tensors().size());
  for (const GgufTensorInfo& t : file.tensors()) {
    TensorSummary ts;
    ts.name = t.name;
    ts.type = std::string(traits_of(t.type).name);
    ts.dims = t.dims;
    ts.num_elements = t.num_elements();
    ts.num_bytes = t.num_bytes;
    add_tensor(s, by_type, std::move(ts));
  }
  finish_totals(s, by_type);
  const auto config = read_model_config(file);
  const Architecture arch = config.ok() ? config->arch : Architecture::Llama;
  set_config(s, config, file.get_string("general.architecture").value_or(architecture_name(arch)));
  return s;
}

}  // namespace

Result<ModelFileSummary> inspect_model_file(const std::string& path) {
  auto summary = inspect_file_alone(path);
  if (summary.ok() && summary->config) summary->load_error = load_problem(path);
  return summary;
}

ModelShape ModelFileConfig::shape() const {
  ModelShape m;
  m.num_layers = num_layers;
  m.hidden_size = hidden_size;
  m.ffn_size = ffn_size;
  m.num_heads = num_heads;
  m.num_kv_heads = num_kv_heads;
  m.head_dim = head_dim;
  m.vocab_size = vocab_size;
  m.context_length = context_length;
  return m;
}

// ---- TextTokenizer -----------------------------------------------------------

struct TextTokenizer::Impl {
  std::unique_ptr<Tokenizer> tokenizer;
};

TextTokenizer::TextTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TextTokenizer::~TextTokenizer() = default;

Result<std::unique_ptr<TextTokenizer>> TextTokenizer::open(const std::string& path) {
  auto read = [&path]() -> Result<VocabData> {
    if (is_hf_directory(path)) return read_hf_tokenizer_dir(path);
    auto file = GgufFile::open(path);
    if (!file.ok()) return Error{file.error()};
    return read_vocab(**file);
  };
  auto vocab = read();
  if (!vocab.ok()) return Error{vocab.error()};
  auto tokenizer = create_tokenizer(*vocab);
  if (!tokenizer.ok()) return Error{fmt::format("{}: {}", path, tokenizer.error())};
  auto impl = std::make_unique<Impl>();
  impl->tokenizer = std::move(tokenizer).value();
  // The tokenizer copied what it needs from VocabData; the mapping can go.
  return std::unique_ptr<TextTokenizer>(new TextTokenizer(std::move(impl)));
}

std::vector<int32_t> TextTokenizer::encode(std::string_view text, bool parse_special, bool add_bos,
                                           std::string* warning) const {
  const Tokenizer& t = *impl_->tokenizer;
  std::vector<int32_t> ids;
  if (add_bos && t.add_bos() && t.bos_id() >= 0) ids.push_back(t.bos_id());
  EncodeIssues issues;
  const std::vector<int32_t> body = t.encode(text, parse_special, &issues);
  if (warning) *warning = describe(issues);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::string TextTokenizer::piece(int32_t id) const { return std::string(impl_->tokenizer->token_text(id)); }

std::string TextTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text = impl_->tokenizer->decode(ids);
  // encode() put this space before the text (SentencePiece dummy prefix); as
  // llama.cpp's detokeniser does, take it off so that decode inverts encode.
  if (impl_->tokenizer->add_space_prefix() && !text.empty() && text.front() == ' ') text.erase(0, 1);
  return text;
}

int32_t TextTokenizer::vocab_size() const { return impl_->tokenizer->vocab_size(); }
int32_t TextTokenizer::bos_id() const { return impl_->tokenizer->bos_id(); }
int32_t TextTokenizer::eos_id() const { return impl_->tokenizer->eos_id(); }

}  // namespace kvscope
