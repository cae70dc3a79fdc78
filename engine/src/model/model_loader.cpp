#include "model/model_loader.h"

#include <fmt/format.h>

#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "model/hf_model_loader.h"
#include "model/recommended_sampling.h"
#include "tokenizer/read_vocab.h"

namespace kvscope {

namespace {

// The embedding's rows against the vocabulary's tokens (load_model's header says why).
Status check_vocab_rows(const std::string& path, const LoadedModel& m, bool gguf) {
  const auto tokens = static_cast<int64_t>(m.vocab.tokens.size());
  const int64_t rows = m.weights->config.vocab_size;
  if (tokens > rows) {
    return Error{fmt::format("{}: the vocabulary has {} tokens but the embedding only {} rows", path, tokens, rows)};
  }
  if (gguf && tokens != rows) {
    return Error{fmt::format("{}: tokenizer.ggml.tokens has {} tokens but token_embd.weight has {} rows: the ids "
                             "past the list would have no text; the file is inconsistent (llama.cpp refuses it too)",
                             path, tokens, rows)};
  }
  return Status::success();
}

}  // namespace

Result<LoadedModel> load_model(const std::string& path) {
  if (is_hf_directory(path)) {
    auto hf = load_hf_directory(path);
    if (!hf.ok()) return Error{hf.error()};
    LoadedModel m{std::move(hf->weights), std::move(hf->vocab), std::move(hf->architecture),
                  read_generation_config(path)};
    if (Status s = check_vocab_rows(path, m, false); !s.ok()) return Error{s.error()};
    return m;
  }
  auto opened = GgufFile::open(path);
  if (!opened.ok()) return Error{opened.error()};
  std::shared_ptr<const GgufFile> file = std::move(opened).value();
  auto weights = load_gguf_weights(file);
  if (!weights.ok()) return Error{weights.error()};
  auto vocab = read_vocab(*file);
  if (!vocab.ok()) return Error{vocab.error()};
  LoadedModel m{std::move(weights).value(), std::move(vocab).value(), {}, {}};
  m.architecture = file->get_string("general.architecture").value_or("llama");  // the loader required it
  m.sampling = read_gguf_sampling(*file);
  if (Status s = check_vocab_rows(path, m, true); !s.ok()) return Error{s.error()};
  return m;
}

}  // namespace kvscope
