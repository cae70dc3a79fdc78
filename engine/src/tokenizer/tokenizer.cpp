#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"

namespace kvscope {

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  for (int32_t id : ids) out += token_bytes(id, render_special);
  return out;
}

Result<std::unique_ptr<Tokenizer>> create_tokenizer(const VocabData& vocab) {
  if (vocab.model == "gpt2") return BpeTokenizer::create(vocab);
  if (vocab.model == "llama") return SpmTokenizer::create(vocab);
  return Error{fmt::format(
      "tokenizer: model '{}' is not supported (known: 'llama' for SentencePiece, 'gpt2' for "
      "byte-level BPE)",
      vocab.model)};
}

}  // namespace kvscope
