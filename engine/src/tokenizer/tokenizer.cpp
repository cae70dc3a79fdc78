#include "tokenizer/tokenizer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"

namespace kvscope {

void EncodeIssues::add_replaced(int32_t byte, bool dropped) {
  if (first_byte < 0) first_byte = byte;
  ++(dropped ? num_dropped : num_replaced);
}

std::string describe(const EncodeIssues& issues) {
  std::vector<std::string> parts;
  if (issues.num_invalid_bytes > 0) {
    const bool one = issues.num_invalid_bytes == 1;
    parts.push_back(fmt::format("the text has {} byte{} that {} not valid UTF-8", issues.num_invalid_bytes,
                                one ? "" : "s", one ? "is" : "are"));
  }
  const int32_t num_missing = issues.num_replaced + issues.num_dropped;
  if (num_missing > 0) {
    // They are characters, or with invalid UTF-8 stray bytes: the count
    // does not tell which, so the sentence names both.
    std::string what = fmt::format("{} {} no token in this vocabulary", num_missing,
                                   num_missing == 1 ? "character or stray byte has" : "characters or stray bytes have");
    if (issues.first_byte >= 0) what += fmt::format(" (the first starts with byte 0x{:02X})", issues.first_byte);
    if (issues.num_replaced > 0) {
      what += fmt::format("; {} became U+FFFD's token (or the unknown token where there is none)",
                          issues.num_replaced);
    }
    if (issues.num_dropped > 0) what += fmt::format("; {} left out (nothing to stand for them)", issues.num_dropped);
    parts.push_back(std::move(what));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special, EncodeIssues* issues) const {
  const TextRange all{0, text.size()};
  return encode_with_plain_ranges(text, parse_special ? std::span<const TextRange>() : std::span(&all, 1), issues);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  for (int32_t id : ids) out += token_bytes(id, render_special);
  return out;
}

Result<std::unique_ptr<Tokenizer>> create_tokenizer(const VocabData& vocab) {
  if (vocab.model == "gpt2" || vocab.model == "gemma4") return BpeTokenizer::create(vocab);
  if (vocab.model == "llama") return SpmTokenizer::create(vocab);
  return Error{fmt::format(
      "tokenizer: model '{}' is not supported (known: 'llama' for SentencePiece, 'gpt2' for "
      "byte-level BPE, 'gemma4' for Gemma 4's BPE; not yet WordPiece 'bert' or Unigram 't5')",
      vocab.model)};
}

}  // namespace kvscope
