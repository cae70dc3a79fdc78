// The vocabulary a tokenizer fuzzer runs on, chosen once per process: the
// GGUF file named by an environment variable (scripts/run_fuzz.sh points it at
// a fetched fixture or the default model: real vocabularies, with real gaps),
// else a small hand-built one, so the fuzzers also run with nothing fetched.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "model/gguf_file.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_data.h"

namespace kvscope::fuzz {

// A SentencePiece vocabulary with byte fallback (<0x00>..<0xFF>), a few
// merged pieces, a user-defined token and the three Llama control tokens.
inline VocabData tiny_spm_vocab() {
  VocabData v;
  v.model = "llama";
  v.pre = "default";
  auto add = [&v](const std::string& text, float score, TokenType type) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.token_types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    add(hex, 0, TokenType::kByte);
  }
  float score = -1;
  for (const char* piece : {"▁", "▁t", "he", "▁the", "a", "b", "c", "e", "h", "t", "▁a", "ab", "é", "日本"}) {
    add(piece, score, TokenType::kNormal);
    score -= 1;
  }
  add("<tool>", 0, TokenType::kUserDefined);
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = true;
  v.add_space_prefix = true;
  return v;
}

// The tokenizer for this process: from the GGUF at $`env_var` when set, else
// from `fallback`. A set variable that does not load is a setup error: abort
// with the message rather than fuzz something else.
inline std::unique_ptr<Tokenizer> fuzz_tokenizer(const char* env_var, VocabData (*fallback)()) {
  VocabData vocab;
  const char* path = std::getenv(env_var);
  if (path && *path) {
    auto file = GgufFile::open(path);
    if (!file.ok()) {
      std::fprintf(stderr, "%s=%s: %s\n", env_var, path, file.error().c_str());
      std::abort();
    }
    auto read = read_vocab(**file);
    if (!read.ok()) {
      std::fprintf(stderr, "%s=%s: %s\n", env_var, path, read.error().c_str());
      std::abort();
    }
    vocab = std::move(read).value();
    std::fprintf(stderr, "fuzzing the tokenizer of %s (%zu tokens)\n", path, vocab.tokens.size());
  } else {
    vocab = fallback();
    std::fprintf(stderr, "fuzzing a built-in %zu-token vocabulary (set %s to use a GGUF's)\n",
                 vocab.tokens.size(), env_var);
  }
  auto tok = create_tokenizer(vocab);
  if (!tok.ok()) {
    std::fprintf(stderr, "cannot build the tokenizer: %s\n", tok.error().c_str());
    std::abort();
  }
  return std::move(tok).value();
}

}  // namespace kvscope::fuzz
