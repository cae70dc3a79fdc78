// Where tests find their inputs: the shared fixtures, the project's test data
// and the default model. Tests that need a missing file GTEST_SKIP with a reason.
#pragma once

#include <string>

namespace kvscope::test {

// ../shared/fixtures/tokenizer (or $KVSCOPE_FIXTURES_DIR); empty if absent.
std::string tokenizer_fixtures_dir();
// tests/data in the source tree.
std::string test_data_dir();
// The default model file (SmolLM2-135M-Instruct Q4_1) if present, else empty.
// Looks in $KVSCOPE_MODEL_DIR, then ~/.local/share/kvscope/models.
std::string default_model_path();
// The Gemma 3 270M file if present, else empty.
std::string gemma_model_path();

}  // namespace kvscope::test
