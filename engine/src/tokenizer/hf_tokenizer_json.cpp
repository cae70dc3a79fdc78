#include "tokenizer/hf_tokenizer_json.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/sentencepiece_proto.h"

namespace kvscope {

namespace {
using nlohmann::json;

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Collects every "Split" regex and the kinds of the steps, walking Sequences.
void collect_pre_tokenizers(const json& node, std::vector<std::string>& kinds, std::vector<std::string>& regexes,
                            bool& individual_digits) {
  if (!node.is_object()) return;
  const std::string type = node.value("type", "");
  if (type == "Sequence" && node.contains("pretokenizers")) {
    for (const json& child : node["pretokenizers"]) collect_pre_tokenizers(child, kinds, regexes, individual_digits);
    return;
  }
  kinds.push_back(type);
  if (type == "Digits") individual_digits |= node.value("individual_digits", false);
  if (type == "Split" && node.contains("pattern") && node["pattern"].is_object() &&
      node["pattern"].contains("Regex") && node["pattern"]["Regex"].is_string())
    regexes.push_back(node["pattern"]["Regex"].get<std::string>());
}

// Maps the pre_tokenizer structure onto a PreTokenizer name.
Result<std::string> pre_tokenizer_name(const json& pre) {
  // No pre-tokenizer: GPT-2's split, as kvscope has always read it ("default"
  // is llama.cpp's row for GGUF files without a name, which splits more).
  if (pre.is_null()) return std::string("gpt2");
  std::vector<std::string> kinds, regexes;
  bool individual_digits = false;
  collect_pre_tokenizers(pre, kinds, regexes, individual_digits);
  auto has = [&](std::string_view needle) {
    for (const auto& r : regexes)
      if (r.find(needle) != std::string::npos) return true;
    return false;
  };
  if (has("\\p{N}{1,3}")) return std::string("llama3");
  if (has("(?i:'s") && has("\\p{N}")) return std::string("qwen2");
  if (individual_digits) return std::string("smollm");
  if (regexes.empty() && kinds == std::vector<std::string>{"ByteLevel"}) return std::string("gpt2");
  return Error{fmt::format("tokenizer.json: pre_tokenizer {} is not one kvscope knows", pre.dump().substr(0, 200))};
}

// "bos_token": "<s>" or {"content": "<s>", ...}
std::optional<std::string> token_text(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

int32_t find_id(const VocabData& v, const std::string& text) {
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.tokens[i] == text) return static_cast<int32_t>(i);
  return -1;
}
}  // namespace

Result<VocabData> parse_tokenizer_json(std::string_view json_text) {
  const json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Error{"tokenizer.json: not valid JSON"};
  if (!root.contains("model") || !root["model"].is_object()) return Error{"tokenizer.json: no \"model\" object"};
  const json& model = root["model"];
  const std::string type = model.value("type", "");
  if (type != "BPE") return Error{fmt::format("tokenizer.json: model type '{}' is not supported (only BPE)", type)};
  if (!model.contains("vocab") || !model["vocab"].is_object()) return Error{"tokenizer.json: model.vocab is missing"};

  // Ids may come from the vocab or added_tokens and need not be dense.
  std::vector<std::pair<std::string, int64_t>> entries;
  std::vector<std::pair<int64_t, TokenType>> types;
  for (const auto& [piece, id] : model["vocab"].items()) {
    if (!id.is_number_integer()) return Error{fmt::format("tokenizer.json: vocab entry '{}' has no integer id", piece)};
    entries.emplace_back(piece, id.get<int64_t>());
  }
  if (root.contains("added_tokens") && root["added_tokens"].is_array()) {
    for (const json& t : root["added_tokens"]) {
      if (!t.contains("id") || !t["id"].is_number_integer() || !t.contains("content")) continue;
      entries.emplace_back(t["content"].get<std::string>(), t["id"].get<int64_t>());
      types.emplace_back(t["id"].get<int64_t>(), t.value("special", false) ? TokenType::kControl : TokenType::kUserDefined);
    }
  }
  int64_t max_id = -1;
  for (const auto& e : entries) {
    if (e.second < 0 || e.second > (1 << 24)) return Error{fmt::format("tokenizer.json: token id {} is out of range", e.second)};
    max_id = std::max(max_id, e.second);
  }
  VocabData v;
  v.model = "gpt2";
  v.tokens.resize(max_id + 1);
  v.token_types.assign(max_id + 1, TokenType::kUnused);
  for (const auto& [piece, id] : entries) {
    v.tokens[id] = piece;
    v.token_types[id] = TokenType::kNormal;
  }
  for (const auto& [id, t] : types) v.token_types[id] = t;
  for (size_t i = 0; i < v.tokens.size(); ++i)  // holes keep ids aligned but can never match text
    if (v.token_types[i] == TokenType::kUnused) v.tokens[i] = fmt::format("<kvscope_unused_{}>", i);

  if (model.contains("merges") && model["merges"].is_array()) {
    for (const json& m : model["merges"]) {
      if (m.is_string()) v.merges.push_back(m.get<std::string>());
      else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
        v.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
  }
  auto pre = pre_tokenizer_name(root.value("pre_tokenizer", json()));
  if (!pre) return Error{pre.error()};
  v.pre = *pre;
  return v;
}

Result<VocabData> read_hf_tokenizer_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  Result<VocabData> vocab = Error{""};
  if (auto text = read_file((fs::path(dir) / "tokenizer.json").string())) {
    vocab = parse_tokenizer_json(*text);
  } else if (fs::exists(fs::path(dir) / "tokenizer.model")) {
    vocab = read_sentencepiece_model_file((fs::path(dir) / "tokenizer.model").string());
  } else {
    return Error{fmt::format("{}: no tokenizer.json or tokenizer.model", dir)};
  }
  // The parsers name the file ("tokenizer.json: ..."); the folder says which.
  if (!vocab) return Error{fmt::format("{}/{}", dir, vocab.error())};
  VocabData& v = *vocab;

  if (auto text = read_file((fs::path(dir) / "tokenizer_config.json").string())) {
    const json config = json::parse(*text, nullptr, false);
    if (config.is_discarded()) return Error{fmt::format("{}/tokenizer_config.json: not valid JSON", dir)};
    if (auto bos = token_text(config, "bos_token")) v.bos_id = find_id(v, *bos);
    if (auto eos = token_text(config, "eos_token")) v.eos_id = find_id(v, *eos);
    if (auto unk = token_text(config, "unk_token")) v.unk_id = find_id(v, *unk);
    if (auto pad = token_text(config, "pad_token")) v.pad_id = find_id(v, *pad);
    if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) v.add_bos = config["add_bos_token"].get<bool>();
    const json& tpl = config.value("chat_template", json());
    if (tpl.is_string()) {
      v.chat_template = tpl.get<std::string>();
    } else if (tpl.is_array()) {  // [{"name": "default", "template": "..."}, ...]
      for (const json& t : tpl)
        if (t.is_object() && t.value("name", "") == "default" && t.contains("template") && t["template"].is_string())
          v.chat_template = t["template"].get<std::string>();
    }
  }
  return vocab;
}

}  // namespace kvscope
