// `kvscope-cli fetch-model` as a user runs it, without the internet: its help,
// and a model directory that cannot be created gives a clear error and exit 1
// before anything is downloaded. The download itself is model_fetch_test's
// (loopback server); the CLI's "default model is not installed" message points
// here (cli_test.cpp).
//   ctest --test-dir build -R fetch_model_cli_test
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "fetch/model_fetch.h"

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

// A download a stopped run kept whole is only unpacked: the message says so,
// not "fetching from" the URL (nothing is fetched). This one is junk of the
// right size, so the archive check then fails, offline.
TEST(FetchModelCli, AKeptDownloadIsSaidToBeUnpackedNotFetched) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvscope_fetch_kept_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fetch::ModelSource& source = fetch::default_model_source();
  const fs::path archive = dir / fetch::archive_file_name(source);
  { std::ofstream(archive) << "junk"; }
  fs::resize_file(archive, source.archive_size);  // sparse: no disk used
  const auto r = run_cli({"fetch-model", "--dir", dir.string()});
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("unpacking SmolLM2-135M-Instruct.Q4_1.gguf from the download kept in " + archive.string()));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("fetching")));
}

}  // namespace
}  // namespace kvscope
