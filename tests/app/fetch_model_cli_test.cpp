// `kvscope-cli fetch-model` as a user runs it, without the internet: its help,
// and a model directory that cannot be created gives a clear error and exit 1
// before anything is downloaded. The download itself is model_fetch_test's
// (loopback server); the CLI's "default model is not installed" message points
// here (cli_test.cpp).
//   ctest --test-dir build -R fetch_model_cli_test
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace kvscope {
namespace {

using test::run_cli;
using ::testing::HasSubstr;

TEST(FetchModelCli, HelpNamesTheOptions) {
  const auto r = run_cli({"fetch-model", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--quiet"));
  EXPECT_THAT(r.out, HasSubstr("--dir"));
  EXPECT_THAT(r.out, HasSubstr("SmolLM2-135M-Instruct.Q4_1.gguf"));
}

TEST(FetchModelCli, UncreatableDirectoryIsAClearError) {
  const auto r = run_cli({"fetch-model", "--quiet", "--dir", "/proc/kvscope-cannot-exist/models"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("kvscope-cli: error: cannot create the model directory "
                               "/proc/kvscope-cannot-exist/models"));
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace
}  // namespace kvscope
