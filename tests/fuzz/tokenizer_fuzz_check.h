// What every tokenizer fuzzer checks on one input (bpe_tokenizer_fuzzer.cpp,
// spm_tokenizer_fuzzer.cpp): arbitrary bytes encode without a crash, as ids
// inside the vocabulary and never a control token (user text must not become
// <|endoftext|> or <s>: tokenizer.h, EncodeIssues); the ids decode; with
// parse_special the same bytes encode without a crash; and any ids at all,
// taken from the input, decode without a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace kvscope::fuzz {

[[noreturn]] inline void fail_on(const char* what, std::string_view text, const std::vector<int32_t>& ids) {
  std::fprintf(stderr, "tokenizer fuzzer: %s\n  input (%zu bytes):", what, text.size());
  for (unsigned char ch : text) std::fprintf(stderr, " %02x", ch);
  std::fprintf(stderr, "\n  ids:");
  for (int32_t id : ids) std::fprintf(stderr, " %d", id);
  std::fprintf(stderr, "\n");
  std::abort();
}

// `round_trip`: decode(encode(text)) must give the text back whenever encode
// reported nothing replaced (byte-level BPE keeps every byte it can spell).
inline void check_tokenizer(const Tokenizer& tok, const uint8_t* data, size_t size, bool round_trip) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  EncodeIssues issues;
  const std::vector<int32_t> ids = tok.encode(text, /*parse_special=*/false, &issues);
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.vocab_size()) fail_on("encode gave an id outside the vocabulary", text, ids);
    if (tok.is_control(id)) {
      std::string what = "plain text encoded to control token " + std::to_string(id) + " '" +
                         std::string(tok.token_text(id)) + "'";
      fail_on(what.c_str(), text, ids);
    }
  }
  const std::string decoded = tok.decode(ids);
  if (round_trip && !issues.any() && decoded != text) fail_on("decode(encode(text)) != text", text, ids);

  (void)tok.encode(text, /*parse_special=*/true, nullptr);

  std::vector<int32_t> raw(size / sizeof(int32_t));
  if (!raw.empty()) std::memcpy(raw.data(), data, raw.size() * sizeof(int32_t));
  (void)tok.decode(raw, /*render_special=*/true);
}

}  // namespace kvscope::fuzz
