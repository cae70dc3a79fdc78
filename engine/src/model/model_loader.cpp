#include "model/model_loader.h"

#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "model/hf_model_loader.h"
#include "model/recommended_sampling.h"
#include "tokenizer/read_vocab.h"

namespace kvscope {

Result<LoadedModel> load_model(const std::string& path) {
  if (is_hf_directory(path)) {
    auto hf = load_hf_directory(path);
    if (!hf.ok()) return Error{hf.error()};
    return LoadedModel{std::move(hf->weights), std::move(hf->vocab), std::move(hf->architecture),
                       read_generation_config(path)};
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
  return m;
}

}  // namespace kvscope
