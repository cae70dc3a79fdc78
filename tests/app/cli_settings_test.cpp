// kvscope-cli's engine options are generated from the setting table: every
// row has its option in generate/chat/bench/model-info, out-of-range values
// are refused naming the option, and warnings (threads above the CPUs, a
// context above the trained one) are printed without stopping the run.
// Runs the built binary on a tiny random model (tests/support/tiny_model.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli_runner.h"
#include "kvscope/setting_table.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

using ::testing::HasSubstr;

// The tiny model, written once per process.
const std::string& tiny_model() {
  static const std::string path = [] {
    const std::string p = test::tiny_model_temp_path("cli_settings");
    EXPECT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, p).ok());
    return p;
  }();
  return path;
}

TEST(CliSettings, EverySettingHasItsOptionInEveryEngineCommand) {
  for (const char* command : {"generate", "chat", "bench", "model-info"}) {
    const test::CliResult r = test::run_cli({command, "--help"});
    ASSERT_EQ(r.exit_code, 0) << command << r.err;
    for (const SettingSpec& s : engine_settings()) {
      EXPECT_THAT(r.out, HasSubstr("--" + s.cli_option())) << command << " lacks the option of " << s.key;
      if (!s.cli_negation.empty()) {
        EXPECT_THAT(r.out, HasSubstr("--" + s.cli_negation)) << command;
      }
    }
  }
}

TEST(CliSettings, OutOfRangeValuesAreRefusedNamingTheOption) {
  const std::string& model = tiny_model();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"--block-size", "0"}, "--block-size: block size = 0 is out of range [1, 2048]"},
      {{"--max-seqs", "5000"}, "--max-seqs: max sequences = 5000 is out of range [1, 4096]"},
      {{"--kv-budget", "lots"}, "--kv-budget: kv_budget: 'lots' is not a size"},
      {{"--threads", "-1"}, "--threads: threads = -1 is out of range [0, 1024]"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"generate", "--model", model, "-p", "hi", "-n", "1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const test::CliResult r = test::run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  // Every problem at once, not the first only.
  const test::CliResult both =
      test::run_cli({"generate", "--model", model, "-p", "hi", "--block-size", "0", "--max-seqs", "0"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("--block-size"));
  EXPECT_THAT(both.err, HasSubstr("--max-seqs"));
  const test::CliResult choice = test::run_cli({"generate", "--model", model, "-p", "hi", "--policy", "eager"});
  EXPECT_EQ(choice.exit_code, 2);
  EXPECT_THAT(choice.err, HasSubstr("--policy"));
}

TEST(CliSettings, TooManyThreadsAreLoweredWithAWarningNotAStall) {
  const std::string& model = tiny_model();
  const auto start = std::chrono::steady_clock::now();
  const test::CliResult r =
      test::run_cli({"generate", "--model", model, "-p", "hello", "-n", "16", "--temp", "0", "--threads", "1000"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: threads = 1000 is more than the"));
  EXPECT_LT(seconds, 30.0) << "1000 spinning threads on a few cores would crawl";
}

// A KVSCOPE_CPU that names no level is said, not silently ignored (a
// benchmark meant to measure the AVX2 path would measure the detected one).
TEST(CliSettings, AnUnknownCpuLevelIsSaid) {
  ::setenv("KVSCOPE_CPU", "avx3", 1);
  const test::CliResult r = test::run_cli({"generate", "--model", tiny_model(), "-p", "hello", "-n", "1"});
  ::unsetenv("KVSCOPE_CPU");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("KVSCOPE_CPU=avx3 is not scalar, avx2 or avx512; using the detected level"));
}

TEST(CliSettings, ContextAboveTheTrainedOneIsWarnedAbout) {
  const std::string& model = tiny_model();
  const test::CliResult r =
      test::run_cli({"generate", "--model", model, "-p", "hello", "-n", "2", "--ctx", "1000000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: max model length 1000000 is above the model's trained context"));
  // --json says it too: everything stderr warned about.
  const test::CliResult j =
      test::run_cli({"generate", "--model", model, "-p", "hello", "-n", "2", "--ctx", "1000000", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json out = nlohmann::json::parse(j.out);
  ASSERT_GE(out["warnings"].size(), 1u) << j.out;
  EXPECT_THAT(out["warnings"][0].get<std::string>(), HasSubstr("above the model's trained context"));
}

TEST(CliSettings, ModelInfoShowsThePlanForTheOptionsGiven) {
  const std::string& model = tiny_model();
  const test::CliResult r = test::run_cli({"model-info", "--model", model, "--num-blocks", "37", "--block-size", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("KV plan     37 blocks of 8 tokens"));
  // 296 tokens, under the tiny model's context of 512: the pool's length is the context's.
  EXPECT_THAT(r.out, HasSubstr("max model length 296 (what the pool holds; the model's context is 512)"));
  // The KV figures follow the cache type: the tiny model's f32 K and V are
  // 2 * 2 layers * 2 KV heads * 16 dims * 4 bytes = 512 bytes a token, at f16 256.
  EXPECT_THAT(r.out, HasSubstr("KV cache    512 B per token (f32 K and V)"));
  const test::CliResult f16 = test::run_cli({"model-info", "--model", model, "--kv-cache-type", "f16"});
  ASSERT_EQ(f16.exit_code, 0) << f16.err;
  EXPECT_THAT(f16.out, HasSubstr("KV cache    256 B per token (f16 K and V), 128.0 KiB at 512 tokens"));
  // The JSON's top-level KV figures are the text's, for the type in force.
  const test::CliResult f16_json = test::run_cli({"model-info", "--model", model, "--kv-cache-type", "f16", "--json"});
  ASSERT_EQ(f16_json.exit_code, 0) << f16_json.err;
  const nlohmann::json j = nlohmann::json::parse(f16_json.out);
  EXPECT_EQ(j["kv_cache_type"], "f16");
  EXPECT_EQ(j["kv_bytes_per_token"], 256);
  EXPECT_EQ(j["kv_plan"]["kv_bytes_per_token"], 256);
  EXPECT_EQ(j["memory_bytes_full_context"], j["weight_bytes"].get<int64_t>() + 256 * 512);
  const test::CliResult tiny = test::run_cli({"model-info", "--model", model, "--kv-budget", "1", "--json"});
  EXPECT_EQ(tiny.exit_code, 1) << "a plan that does not fit fails as generate would, after printing it";
  EXPECT_THAT(tiny.out, HasSubstr("\"ok\": false"));
  EXPECT_THAT(tiny.out, HasSubstr("holds no block"));
}

// --tp N: each rank's query and KV heads, weights and KV share of the
// planned pool; a copied KV head is said; a model that does not split says why.
TEST(CliSettings, ModelInfoShowsEachRankAtTpAboveOne) {
  const std::string path = test::tiny_model_temp_path("cli_settings_ranks");
  const test::TinyModelSpec spec = test::tensor_parallel_tiny_spec();
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  const test::CliResult two = test::run_cli({"model-info", "--model", path, "--tp", "2", "--num-blocks", "12"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_THAT(two.out, HasSubstr("ranks       tp = 2 (tp_reduce = fast): 3 KV heads stored; one block table"));
  // Rank 0: KV group 0 (query heads 0-1); rank 1: groups 1-2 (query heads 2-5).
  EXPECT_THAT(two.out, ::testing::ContainsRegex("  0 +0-1 +0 +[0-9]"));
  EXPECT_THAT(two.out, ::testing::ContainsRegex("  1 +2-5 +1-2 +[0-9]"));
  const test::CliResult four = test::run_cli({"model-info", "--model", path, "--tp", "4", "--json"});
  ASSERT_EQ(four.exit_code, 0) << four.err;
  EXPECT_THAT(four.out, HasSubstr("\"num_kv_head_slots\": 4"));
  EXPECT_THAT(four.out, HasSubstr("\"kv_heads_replicated\": true"));
  const test::CliResult one = test::run_cli({"model-info", "--model", path, "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("\"tensor_parallel\": null"));
  std::remove(path.c_str());
  // The default tiny model's FFN (4 blocks of 32) cannot be cut into 8 chunks.
  // The plan is still printed, and the exit status is generate's (1).
  const test::CliResult refused = test::run_cli({"model-info", "--model", tiny_model(), "--tp", "2"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_THAT(refused.out, HasSubstr("ranks       cannot split: "));
  EXPECT_THAT(refused.out, HasSubstr("KV plan"));
}

// model-info's exit status is generate's answer to "would these settings
// run?": a backend that cannot run here is a 1 (it said 0 while generate
// refused), with the reason in the report.
TEST(CliSettings, ModelInfoFailsWhereTheBackendCannotRun) {
  const test::CliResult r = test::run_cli({"model-info", "--model", tiny_model(), "--backend", "cuda", "--json"});
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const test::CliResult gen =
      test::run_cli({"generate", "--model", tiny_model(), "--backend", "cuda", "-p", "hi", "-n", "1"});
  // A CUDA build on a GPU machine runs it; everywhere else both refuse.
  EXPECT_EQ(r.exit_code, j["backend"].contains("error") ? 1 : 0) << r.out;
  EXPECT_EQ(r.exit_code, gen.exit_code) << gen.err;
}

// --spec-never-pause: a proposer whose guesses fail keeps guessing in every
// decode step (the pause rule would stop it), and the text is the same.
TEST(CliSettings, SpecNeverPauseGuessesInEveryDecodeStep) {
  const std::vector<std::string> args = {"generate", "--model", tiny_model(), "-p", "hello there", "-n", "24",
                                         "--temp", "0", "--json", "--spec", "early_exit",
                                         "--spec-early-exit-layer", "1"};
  const test::CliResult paused = test::run_cli(args);
  ASSERT_EQ(paused.exit_code, 0) << paused.err;
  std::vector<std::string> forced_args = args;
  forced_args.push_back("--spec-never-pause");
  const test::CliResult forced = test::run_cli(forced_args);
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  const nlohmann::json p = nlohmann::json::parse(paused.out), f = nlohmann::json::parse(forced.out);
  ASSERT_GE(p["spec"]["pauses"].get<int>(), 1) << "the random tiny model's early exit must fail and pause: " << paused.out;
  EXPECT_EQ(f["spec"]["pauses"], 0) << forced.out;
  // One draft per verifying step: the 23 decode steps at most (fewer when a
  // draft's tokens are accepted), and more than the paused run's.
  EXPECT_GT(f["spec"]["drafts"].get<int>(), p["spec"]["drafts"].get<int>()) << forced.out;
  EXPECT_GE(f["spec"]["drafts"].get<int>() + f["spec"]["accepted_tokens"].get<int>(), 23) << forced.out;
  EXPECT_EQ(f["generated_ids"], p["generated_ids"]);
}

// chat: sampling options not typed come from the model file's
// general.sampling.* keys, else kvscope's chat defaults; typed ones win; the
// line on stderr says which is which.
TEST(CliSettings, ChatTakesUntypedSamplingFromTheModelFile) {
  const std::string path = test::tiny_model_temp_path("cli_settings_sampling");
  test::TinyModelSpec spec;
  spec.gguf_u32["general.sampling.top_k"] = 7;
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  const test::CliResult r = test::run_cli({"chat", "--model", path, "-n", "2"}, "hello\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("top-k 7"));
  EXPECT_THAT(r.err, HasSubstr("from GGUF general.sampling.*: --top-k"));
  EXPECT_THAT(r.err, HasSubstr("repeat penalty 1.1 over 64 tokens")) << "kvscope's chat default";
  const test::CliResult typed = test::run_cli({"chat", "--model", path, "-n", "2", "--top-k", "3"}, "hello\n");
  ASSERT_EQ(typed.exit_code, 0) << typed.err;
  EXPECT_THAT(typed.err, HasSubstr("top-k 3"));
  EXPECT_THAT(typed.err, HasSubstr("typed: --top-k"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kvscope
