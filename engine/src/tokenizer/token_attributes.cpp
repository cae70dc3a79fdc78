#include "tokenizer/token_attributes.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <span>

namespace kvscope {

namespace {

uint16_t attr_of(TokenType type) {
  switch (type) {
    case TokenType::kNormal: return kAttrNormal;
    case TokenType::kUnknown: return kAttrUnknown;
    case TokenType::kControl: return kAttrControl;
    case TokenType::kUserDefined: return kAttrUserDefined;
    case TokenType::kUnused: return kAttrUnused;
    case TokenType::kByte: return kAttrByte;
    default: return kAttrUndefined;
  }
}

// Texts that llama.cpp treats as control tokens whatever their stored type:
// turn enders and the fill-in-the-middle markers.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",  // <｜end▁of▁sentence｜>
    "<end_of_utterance>",
};
constexpr std::string_view kEndOfMessageTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPrefixTexts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>",
    "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>",
};
constexpr std::string_view kFimSuffixTexts[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
    "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>",
};
constexpr std::string_view kFimMiddleTexts[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>",
    "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>",
};
// These three also end generation.
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepoTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
// Texts that end generation (and are made control tokens).
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~[",
};
// gpt-oss: always rendered, so user-defined.
constexpr std::string_view kAlwaysRenderedTexts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

bool contains_any(std::string_view s, std::initializer_list<std::string_view> needles) {
  for (std::string_view n : needles) {
    if (s.find(n) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

TokenAttributes compute_token_attributes(const VocabData& vocab, const TokenIdMap& ids) {
  const size_t n = vocab.tokens.size();
  TokenAttributes out;
  out.attrs.resize(n, kAttrNormal);
  if (!vocab.token_types.empty()) {
    for (size_t i = 0; i < n; ++i) out.attrs[i] = attr_of(vocab.token_types[i]);
  }
  auto& attrs = out.attrs;
  auto find = [&ids](std::string_view text) -> int32_t {
    auto it = ids.find(text);
    return it == ids.end() ? -1 : it->second;
  };
  auto make_control = [&](int32_t id) {
    if (id >= 0) attrs[id] |= kAttrControl;
  };
  // First text of `texts` present in the vocabulary, made a control token.
  auto first_as_control = [&](std::span<const std::string_view> texts) -> int32_t {
    for (std::string_view t : texts) {
      const int32_t id = find(t);
      if (id >= 0) {
        make_control(id);
        return id;
      }
    }
    return -1;
  };

  int32_t eot = vocab.eot_id;
  if (eot < 0) eot = first_as_control(kEndOfTurnTexts);
  const int32_t eom = vocab.eom_id >= 0 ? vocab.eom_id : first_as_control(kEndOfMessageTexts);
  first_as_control(kFimPrefixTexts);
  first_as_control(kFimSuffixTexts);
  first_as_control(kFimMiddleTexts);
  const int32_t fim_pad = first_as_control(kFimPadTexts);
  const int32_t fim_rep = first_as_control(kFimRepoTexts);
  const int32_t fim_sep = first_as_control(kFimSepTexts);

  std::set<int32_t> eog;
  for (int32_t id : {fim_pad, fim_rep, fim_sep}) {
    if (id >= 0) eog.insert(id);
  }
  for (std::string_view t : kEndOfGenerationTexts) {
    const int32_t id = find(t);
    if (id < 0) continue;
    eog.insert(id);
    make_control(id);
  }
  for (std::string_view t : kAlwaysRenderedTexts) {
    if (const int32_t id = find(t); id >= 0) attrs[id] = kAttrUserDefined;
  }
  for (int32_t id : {vocab.eos_id, eot, eom}) {
    if (id >= 0 && id < static_cast<int32_t>(n)) eog.insert(id);
  }
  auto eog_has = [&](std::string_view text) {
    const int32_t id = find(text);
    return id >= 0 && eog.count(id) != 0;
  };
  // gpt-oss / solar-open: "<|end|>" ends a message, not the generation.
  if ((eog_has("<|return|>") && eog_has("<|call|>") && eog_has("<|end|>")) ||
      (eog_has("<|calls|>") && eog_has("<|flush|>") && eog_has("<|end|>"))) {
    const int32_t end = find("<|end|>");
    eog.erase(end);
    attrs[end] = kAttrUserDefined;
  }
  // Gemma 4 and PLaMo have an ordinary "</s>".
  if ((eog_has("<|tool_response>") || eog_has("<|plamo:eos|>")) && eog_has("</s>")) {
    const int32_t s = find("</s>");
    eog.erase(s);
    attrs[s] = kAttrNormal;
  }
  out.eog_ids.assign(eog.begin(), eog.end());

  // Spaces next to special tokens, set by model name as llama.cpp does.
  std::string name = vocab.model_name;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  auto set = [&](std::string_view text, uint16_t bit, bool on) {
    const int32_t id = find(text);
    if (id < 0) return;
    attrs[id] = on ? (attrs[id] | bit) : (attrs[id] & ~bit);
  };
  if (contains_any(vocab.pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(vocab.architecture, {"nomic-bert-moe", "jina-bert-v3"})) {
    set("<mask>", kAttrLstrip, true);
  } else if (contains_any(name, {"phi-3", "phi3"})) {
    for (uint16_t& a : attrs) {
      if (a & (kAttrControl | kAttrUserDefined | kAttrUnknown)) a |= kAttrRstrip;
    }
    set("</s>", kAttrRstrip, true);
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set(t, kAttrRstrip, false);
  } else if (contains_any(name, {"modern-bert"})) {
    set("[MASK]", kAttrLstrip, true);
  }
  return out;
}

}  // namespace kvscope
