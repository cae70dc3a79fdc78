#include "support/require_data.h"

#include <cstdlib>
#include <string_view>


namespace kvscope::test {
namespace {

std::string_view env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string_view(v) : std::string_view();
}

// Where the model lookup looked (test_paths.cpp: find_model).
std::string model_dir_text() {
  if (!env("KVSCOPE_MODEL_DIR").empty()) return "$KVSCOPE_MODEL_DIR (" + std::string(env("KVSCOPE_MODEL_DIR")) + ")";
  return "$XDG_DATA_HOME/kvscope/models or ~/.local/share/kvscope/models";
}

}  // namespace

bool test_data_required() {
  const std::string_view flag = env("KVSCOPE_REQUIRE_TEST_DATA");
  if (!flag.empty()) return flag != "0";
  return !env("CI").empty();
}

std::string missing_data_message(TestData what) {
  std::string m;
  switch (what) {
    case TestData::kDefaultModel:
      m = "default model (SmolLM2-135M-Instruct.Q4_1.gguf) not found in " + model_dir_text() +
          "; fetch it with: python3 scripts/fetch_model.py";
      break;
    case TestData::kGemmaModel:
      m = "Gemma 3 270M (gemma-3-270m-q4_k_m.gguf) not found in " + model_dir_text() +
          "; fetch it with: python3 scripts/fetch_model.py --gemma";
      break;
    case TestData::kTokenizerFixtures:
      m = "tokenizer fixtures (llama.cpp's ggml-vocab-*.gguf with .inp/.out) not found"
          " ($KVSCOPE_FIXTURES_DIR or the test-data cache); fetch them with: python3 scripts/fetch_test_data.py";
      break;
  }
  if (test_data_required()) {
    m += " [a failure, not a skip, because KVSCOPE_REQUIRE_TEST_DATA=1 or CI is set;"
         " KVSCOPE_REQUIRE_TEST_DATA=0 lets it skip]";
  }
  return m;
}

}  // namespace kvscope::test
