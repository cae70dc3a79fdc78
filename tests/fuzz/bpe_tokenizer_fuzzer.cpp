// libFuzzer target for the byte-level BPE tokenizer: arbitrary bytes encode
// (never a crash, never a control token) and decode; text encoded without
// replacements decodes back to itself (tokenizer_fuzz_check.h).
// Vocabulary: the GGUF at $KVSCOPE_FUZZ_BPE_VOCAB (run_fuzz.sh: the default
// model's, whose byte symbols have gaps), else tiny_bpe_vocab().
// Run: scripts/run_fuzz.sh [seconds]
#include "engine/tokenizer/tiny_vocabs.h"
#include "fuzz/fuzz_vocab.h"
#include "fuzz/tokenizer_fuzz_check.h"

namespace {
kvscope::VocabData tiny_bpe() { return kvscope::test::tiny_bpe_vocab(); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<kvscope::Tokenizer> tok =
      kvscope::fuzz::fuzz_tokenizer("KVSCOPE_FUZZ_BPE_VOCAB", tiny_bpe);
  kvscope::fuzz::check_tokenizer(*tok, data, size, /*round_trip=*/true);
  return 0;
}
