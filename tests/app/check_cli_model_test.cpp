// `kvscope-cli check` on the default model (SmolLM2-135M Q4_1), as a user
// runs it: two serving modes give identical greedy output (exit 0), and a
// mistyped key is a usage error (exit 2) naming it. Label: model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/cli_runner.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

using test::run_cli;
using ::testing::HasSubstr;

TEST(CheckCliModel, TwoServingModesAreIdentical) {
  const std::string model = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!model.empty(), test::TestData::kDefaultModel);
  const test::CliResult r =
      run_cli({"check", "--model", model, "--threads", "2", "-n", "12", "-p", "The capital of France is", "-p",
               "12345 + 67890 =", "--a", "block_size=16,cascade=off", "--b",
               "block_size=1,cascade=on,concurrency=8"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("identical (12 tokens, max logit diff 0)"));
  EXPECT_THAT(r.out, HasSubstr("2 of 2 prompts identical"));

  const test::CliResult bad = run_cli({"check", "--model", model, "-p", "hi", "--a", "kv_dtype=q8_0", "--b", ""});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("unknown setting 'kv_dtype'"));
}

}  // namespace
}  // namespace kvscope
