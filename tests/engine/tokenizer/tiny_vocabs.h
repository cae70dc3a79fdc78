// Small hand-built vocabularies for unit tests that need no files.
#pragma once

#include <string>

#include "tokenizer/byte_level.h"
#include "tokenizer/vocab_data.h"

namespace kvscope::test {

// Byte-level BPE: the 256 byte characters (ids 0..255), a few merges that
// build "Ġthe" and "Ġ2", and ChatML control tokens.
inline VocabData tiny_bpe_vocab(const std::string& pre = "gpt2") {
  VocabData v;
  v.model = "gpt2";
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_level::encode(std::string(1, static_cast<char>(b))));
  v.token_types.assign(256, TokenType::kNormal);
  auto add = [&v](const std::string& text, TokenType type) {
    v.tokens.push_back(text);
    v.token_types.push_back(type);
    return static_cast<int32_t>(v.tokens.size() - 1);
  };
  add("Ġt", TokenType::kNormal);      // 256
  add("he", TokenType::kNormal);      // 257
  add("Ġthe", TokenType::kNormal);    // 258
  add("Ġ2", TokenType::kNormal);      // 259
  v.merges = {"Ġ t", "h e", "Ġt he", "Ġ 2"};
  add("<|im_start|>", TokenType::kControl);  // 260
  v.eos_id = add("<|im_end|>", TokenType::kControl);  // 261
  add("<|endoftext|>", TokenType::kControl);  // 262
  return v;
}

}  // namespace kvscope::test
