#include "tokenizer/read_vocab.h"

#include <fmt/format.h>

#include "model/gguf_file.h"
#include "tokenizer/pre_tokenizer_table.h"

namespace kvscope {

Result<VocabData> read_vocab(const GgufFile& file) {
  VocabData v;
  auto model = file.get_string("tokenizer.ggml.model");
  if (!model) return Error{fmt::format("{}: tokenizer.ggml.model is missing", file.path())};
  v.model = *model;
  v.pre = file.get_string("tokenizer.ggml.pre").value_or("default");
  v.architecture = file.get_string("general.architecture").value_or("");
  v.model_name = file.get_string("general.name").value_or("");
  v.chat_template = file.get_string("tokenizer.chat_template").value_or("");

  const auto* tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (!tokens) return Error{fmt::format("{}: tokenizer.ggml.tokens is missing or not a string array", file.path())};
  v.tokens = *tokens;
  const size_t n = v.tokens.size();

  if (file.find("tokenizer.ggml.scores")) {
    auto scores = file.get_float_array("tokenizer.ggml.scores");
    if (!scores || scores->size() != n)
      return Error{fmt::format("{}: tokenizer.ggml.scores must be {} numbers", file.path(), n)};
    v.scores = std::move(*scores);
  }
  if (file.find("tokenizer.ggml.token_type")) {
    auto types = file.get_int_array("tokenizer.ggml.token_type");
    if (!types || types->size() != n)
      return Error{fmt::format("{}: tokenizer.ggml.token_type must be {} integers", file.path(), n)};
    v.token_types.reserve(n);
    for (int64_t t : *types)
      v.token_types.push_back(t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kUndefined);
  }
  if (file.find("tokenizer.ggml.merges")) {
    const auto* merges = file.get_string_array("tokenizer.ggml.merges");
    if (!merges) return Error{fmt::format("{}: tokenizer.ggml.merges is not a string array", file.path())};
    v.merges = *merges;
  }

  auto read_id = [&](const char* key, int32_t& out) -> Status {
    if (!file.find(key)) return Status::success();
    auto id = file.get_int(key);
    if (!id) return Error{fmt::format("{}: {} is not an integer", file.path(), key)};
    // Out of range: llama.cpp warns and keeps its default, so the file loads.
    if (*id >= 0 && *id < static_cast<int64_t>(n)) out = static_cast<int32_t>(*id);
    return Status::success();
  };
  const bool spm = v.model == "llama";
  if (spm) {
    // llama.cpp's SentencePiece defaults, used when the keys are absent.
    auto default_id = [n](int32_t id) { return id < static_cast<int64_t>(n) ? id : -1; };
    v.unk_id = default_id(0);
    v.bos_id = default_id(1);
    v.eos_id = default_id(2);
  }
  for (auto [key, out] : {std::pair{"tokenizer.ggml.bos_token_id", &v.bos_id},
                          {"tokenizer.ggml.eos_token_id", &v.eos_id},
                          {"tokenizer.ggml.unknown_token_id", &v.unk_id},
                          {"tokenizer.ggml.padding_token_id", &v.pad_id},
                          {"tokenizer.ggml.eot_token_id", &v.eot_id},
                          {"tokenizer.ggml.eom_token_id", &v.eom_id}}) {
    if (Status s = read_id(key, *out); !s) return Error{s.error()};
  }

  // Without the key: SentencePiece adds BOS, BPE does unless its
  // pre-tokenizer row says otherwise (Llama 3 does).
  bool add_bos_default = spm;
  if (v.model == "gemma4") {
    add_bos_default = true;
  } else if (!spm) {
    const PreTokenizerRule* rule = find_pre_tokenizer_rule(v.pre);
    add_bos_default = rule && rule->add_bos_default.value_or(false);
  }
  v.add_bos = file.get_bool("tokenizer.ggml.add_bos_token").value_or(add_bos_default);
  v.add_eos = file.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  v.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix").value_or(spm);
  return v;
}

}  // namespace kvscope
