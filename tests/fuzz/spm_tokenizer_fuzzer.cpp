// libFuzzer target for the SentencePiece tokenizer: arbitrary bytes encode
// (never a crash, never a control token) and decode (tokenizer_fuzz_check.h).
// No round-trip check: SentencePiece adds a space prefix and may normalise.
// Vocabulary: the GGUF at $KVSCOPE_FUZZ_SPM_VOCAB (run_fuzz.sh: the fetched
// Llama fixture), else tiny_spm_vocab() (fuzz_vocab.h).
// Run: scripts/run_fuzz.sh [seconds]
#include "fuzz/fuzz_vocab.h"
#include "fuzz/tokenizer_fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<kvscope::Tokenizer> tok =
      kvscope::fuzz::fuzz_tokenizer("KVSCOPE_FUZZ_SPM_VOCAB", kvscope::fuzz::tiny_spm_vocab);
  kvscope::fuzz::check_tokenizer(*tok, data, size, /*round_trip=*/false);
  return 0;
}
