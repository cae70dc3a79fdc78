// kvscope-cli without a model: tokenize on the vocabulary-only fixtures,
// usage errors (exit 2 with a message), missing or unusable model files
// (exit 1 with a message). Runs the built binary. Label: unit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "app/cli_runner.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

using test::run_cli;
using ::testing::HasSubstr;

std::string starcoder() {
  const std::string dir = test::tokenizer_fixtures_dir();
  return dir.empty() ? std::string() : dir + "/ggml-vocab-starcoder.gguf";
}

#define REQUIRE_FIXTURES(path) KVSCOPE_REQUIRE_DATA(!(path).empty(), test::TestData::kTokenizerFixtures)

TEST(CliTokenize, PrintsIds) {
  const std::string vocab = starcoder();
  REQUIRE_FIXTURES(vocab);
  // Expected ids from the fixture's .out file.
  auto r = run_cli({"tokenize", "--model", vocab, "--text", "Hello world"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "8302 5810\n");

  auto from_stdin = run_cli({"tokenize", "--model", vocab}, " Hello world\n");
  EXPECT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, "12009 5810\n");
}

TEST(CliTokenize, PrintsPiecesAndJson) {
  const std::string vocab = starcoder();
  REQUIRE_FIXTURES(vocab);
  auto pieces = run_cli({"tokenize", "--model", vocab, "--text", "Hello world", "--pieces"});
  EXPECT_EQ(pieces.exit_code, 0) << pieces.err;
  EXPECT_EQ(pieces.out, "8302\tHello\n5810\t\xC4\xA0world\n");  // "Ġworld"

  auto json = run_cli({"tokenize", "--model", vocab, "--text", "Hello world", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_EQ(j["ids"], nlohmann::json({8302, 5810}));
  EXPECT_EQ(j["pieces"][0], "Hello");
}

TEST(CliUsage, BadArgumentsExitWithTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"tokenize", "--no-such-flag"},
      {"generate", "--threads", "many", "-p", "x"},
      {"generate", "--temp", "-1", "-p", "x"},
      {"generate", "--top-p", "1.5", "-p", "x"},
      {"generate", "-n", "0", "-p", "x"},  // the engine's 0 (prompt only) is not a reply
      {"chat", "--max-tokens", "0"},
      {"generate", "--block-size", "0", "-p", "x"},
      {"generate", "--kv-budget", "lots", "-p", "x"},
      {"generate", "--system", "s", "-p", "x"},  // --system needs --chat
      {"generate", "-p", ""},
      {"bench", "--repeats", "0"},
      {"bench", "--concurrency", "0"},
      {"generate", "--paging", "--no-paging", "-p", "x"},  // both: "off" used to win silently
      {"check", "-p", "x", "--temp", "-1"},
      {"bench", "--out", "/nonexistent-dir/b.json"},  // refused before the runs
  };
  for (const auto& args : cases) {
    auto r = run_cli(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << joined;
  }
}

TEST(CliUsage, HelpExitsWithZero) {
  auto r = run_cli({"generate", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--max-tokens"));
}

TEST(CliModel, MissingModelFileExitsWithOne) {
  for (const char* cmd : {"generate", "chat", "bench", "tokenize", "model-info"}) {
    std::vector<std::string> args = {cmd, "--model", "/nonexistent/kvscope/missing.gguf"};
    if (std::string(cmd) == "generate") args.insert(args.end(), {"-p", "hello"});
    if (std::string(cmd) == "tokenize") args.insert(args.end(), {"--text", "hello"});
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr("missing.gguf")) << cmd;
  }
}

TEST(CliModel, MissingDefaultModelSaysHowToFetchIt) {
  ::setenv("KVSCOPE_MODEL_DIR", "/nonexistent/kvscope/models", 1);
  auto r = run_cli({"generate", "-p", "hello"});
  ::unsetenv("KVSCOPE_MODEL_DIR");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("kvscope-cli fetch-model"));
}

TEST(CliModel, VocabularyOnlyFileCannotGenerate) {
  const std::string vocab = starcoder();
  REQUIRE_FIXTURES(vocab);
  auto r = run_cli({"generate", "--model", vocab, "-p", "hello", "-n", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("error"));

  // model-info shows what the file holds, and exits 1 as generate does.
  auto info = run_cli({"model-info", "--model", vocab, "--json"});
  ASSERT_EQ(info.exit_code, 1) << info.err;
  const auto j = nlohmann::json::parse(info.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["num_tensors"], 0);
  EXPECT_TRUE(j["config"].is_null());
  EXPECT_FALSE(j["config_error"].get<std::string>().empty());
}

}  // namespace
}  // namespace kvscope
