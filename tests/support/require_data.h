// Tests that need a file the repository does not hold (a model, the fetched
// tokenizer fixtures) call KVSCOPE_REQUIRE_DATA first. When the file is
// missing the test skips with a reason that says how to fetch it, except
// where the run must not pass by skipping: with KVSCOPE_REQUIRE_TEST_DATA=1
// (scripts/test.sh sets it) or CI set to anything non-empty, it fails with
// the same message. Skips for other reasons (a CPU feature) stay GTEST_SKIP.
//
//   const std::string path = test::default_model_path();
//   KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kDefaultModel);
//
// Qt tests use KVSCOPE_QREQUIRE_DATA from require_data_qt.h.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace kvscope::test {

// What a test found missing; each names its fetch command.
enum class TestData {
  kDefaultModel,       // SmolLM2-135M-Instruct Q4_1: python3 scripts/fetch_model.py
  kGemmaModel,         // Gemma 3 270M: python3 scripts/fetch_model.py --gemma
  kTokenizerFixtures,  // llama.cpp's vocabularies + .inp/.out: python3 scripts/fetch_test_data.py
};

// True when missing data must fail the test: KVSCOPE_REQUIRE_TEST_DATA=1, or
// CI non-empty (and KVSCOPE_REQUIRE_TEST_DATA not set to 0).
bool test_data_required();

// "default model (SmolLM2-135M-Instruct.Q4_1.gguf) not found in <where>;
// fetch it with: python3 scripts/fetch_model.py", plus, when required, why
// this is a failure rather than a skip.
std::string missing_data_message(TestData what);

}  // namespace kvscope::test

// Skips (or, when test data is required, fails) the current test unless
// `present`. A return statement: use it in TEST bodies and SetUp().
#define KVSCOPE_REQUIRE_DATA(present, what)                                      \
  do {                                                                           \
    if (!(present)) {                                                            \
      if (::kvscope::test::test_data_required()) {                               \
        GTEST_FAIL() << ::kvscope::test::missing_data_message(what);             \
      } else {                                                                   \
        GTEST_SKIP() << ::kvscope::test::missing_data_message(what);             \
      }                                                                          \
    }                                                                            \
  } while (false)
