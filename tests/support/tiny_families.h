// Tiny random models of each Llama-family variant kvscope loads, shared by
// the model-family test (tests/engine/runtime/model_family_test.cpp) and the
// tool that writes them for llama.cpp to record reference logits
// (tests/support/write_tiny_families.cpp, scripts/dev/record_family_references.py).
// Changing a case changes its file: the test then asks for a re-recording.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/tiny_model.h"

namespace kvscope::test {

struct TinyFamilyCase {
  std::string name;  // file stem and the key in the reference JSON
  TinyModelSpec spec;
};

// llama (the pipeline itself), qwen2 (Q/K/V biases), qwen3 (per-head Q/K
// norms, head_dim * heads != hidden), phi3 (fused Q|K|V and gate|up) and
// llama31 (rope_freqs: Llama 3.x rope scaling) and gemma2 (soft-capped
// attention scores and logits, sliding window on even layers).
std::vector<TinyFamilyCase> tiny_family_cases();

// The token ids every case is teacher-forced on (one prefill).
std::vector<int32_t> tiny_family_tokens();

// FNV-1a, 64 bits, of a file's bytes (what the reference JSON records to tie
// its logits to the exact file); 0 when it cannot be read.
uint64_t fnv1a64_file(const std::string& path);

}  // namespace kvscope::test
