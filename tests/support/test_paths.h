// Where tests find their inputs: the fetched tokenizer fixtures, the project's
// test data and the models. Each lookup returns "" when the file is absent;
// tests then call KVSCOPE_REQUIRE_DATA (require_data.h), which skips or fails.
#pragma once

#include <string>

namespace kvscope::test {

// llama.cpp's vocabulary test files (ggml-vocab-*.gguf + .inp/.out), as
// scripts/fetch_test_data.py places them: $KVSCOPE_FIXTURES_DIR if set, else
// $KVSCOPE_TEST_DATA_DIR/tokenizer, else $XDG_CACHE_HOME/kvscope/test-data/
// tokenizer, else ~/.cache/kvscope/test-data/tokenizer. Empty if that folder
// does not exist.
std::string tokenizer_fixtures_dir();
// tests/data in the source tree ($KVSCOPE_SOURCE_DIR/tests/data when that is set).
std::string test_data_dir();
// The default model file (SmolLM2-135M-Instruct Q4_1) if present, else empty.
// Looks in $KVSCOPE_MODEL_DIR, else $XDG_DATA_HOME/kvscope/models, else
// ~/.local/share/kvscope/models.
std::string default_model_path();
// The Gemma 3 270M file if present, else empty.
std::string gemma_model_path();

}  // namespace kvscope::test
