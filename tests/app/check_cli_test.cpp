// `kvscope-cli check` on random tiny models (label `unit`): identical sides
// exit 0 and say so, another model's weights exit 3 with where they diverge,
// --json carries the verdicts, the prompts file splits on blank lines, and
// bad input is a usage error (exit 2) with the message. The default-model
// case is check_cli_model_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "app/cli_runner.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

namespace fs = std::filesystem;
using test::run_cli;
using ::testing::HasSubstr;
using ::testing::Not;

class CheckCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = test::tiny_model_temp_path("check_cli");
    other_ = test::tiny_model_temp_path("check_cli_other");
    prompts_ = model_ + ".prompts.txt";
    test::TinyModelSpec spec;
    spec.matrix_type = TensorType::Q8_0;
    spec.seed = 3;
    ASSERT_TRUE(test::write_tiny_gguf(spec, model_).ok());
    spec.seed = 4;
    ASSERT_TRUE(test::write_tiny_gguf(spec, other_).ok());
    // Two prompts: the first spans two lines; blank lines (one with spaces) separate them.
    std::ofstream(prompts_) << "The quick brown fox\njumps over the lazy dog.\n\n  \n\nOnce upon a time\n";
  }
  static void TearDownTestSuite() {
    fs::remove(model_);
    fs::remove(other_);
    fs::remove(prompts_);
  }
  static std::vector<std::string> args(std::vector<std::string> extra) {
    std::vector<std::string> a = {"check", "--model", model_, "--prompts", prompts_, "-n", "8", "--threads", "1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  static inline std::string model_, other_, prompts_;
};

TEST_F(CheckCli, IdenticalSidesExitZero) {
  const test::CliResult r = run_cli(args({"--a", "block_size=16", "--b", "block_size=1,concurrency=8,chunk=7"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("a: block_size=16"));
  EXPECT_THAT(r.out, HasSubstr("b: block_size=1,concurrency=8,chunk=7"));
  EXPECT_THAT(r.out, HasSubstr("identical (8 tokens, max logit diff 0)"));
  EXPECT_THAT(r.out, HasSubstr("2 of 2 prompts identical"));
  EXPECT_THAT(r.out, Not(HasSubstr("DIVERGES")));
  // What the runs did: b's companions shared steps with the checked request.
  EXPECT_THAT(r.out, HasSubstr("\nruns\n  a: "));
  EXPECT_THAT(r.out, HasSubstr("b: 38 steps, up to 7 sequences per step"));  // 8 in flight, one finishing
  EXPECT_THAT(r.out, Not(HasSubstr("note: ")));
}

// A setting under test that never engaged is named: a 2-token prompt shares
// no whole block of 16 with its companions, so cascade = on ran no cascade
// pass, and "identical" says nothing about it; the prompts file's longer
// prompts do share blocks, and then nothing is said. The JSON carries each
// side's run statistics.
TEST_F(CheckCli, SaysWhenTheSettingUnderTestNeverEngaged) {
  const std::vector<std::string> short_prompt = {"check", "--model", model_, "-p", "Hi", "-n", "8", "--threads", "1",
                                                 "--a", "cascade=off,concurrency=4", "--b", "cascade=on,concurrency=4"};
  const test::CliResult r = run_cli(short_prompt);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("note: b: cascade = on, but no step ran a cascade pass"));
  const test::CliResult shared = run_cli(args({"--a", "cascade=off,concurrency=4", "--b", "cascade=on,concurrency=4"}));
  EXPECT_EQ(shared.exit_code, 0) << shared.err;
  EXPECT_THAT(shared.out, Not(HasSubstr("note: ")));
  EXPECT_THAT(shared.out, HasSubstr("8 with a cascade pass"));  // b's line
  std::vector<std::string> as_json = short_prompt;
  as_json.push_back("--json");
  const test::CliResult j = run_cli(as_json);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json report = nlohmann::json::parse(j.out);
  EXPECT_EQ(report["stats_b"]["num_cascade_steps"], 0);
  EXPECT_GE(report["stats_b"]["max_batch_seqs"].get<int>(), 2);
  EXPECT_GT(report["stats_a"]["num_steps"].get<int>(), 0);
  ASSERT_EQ(report["unexercised"].size(), 1u);
  EXPECT_THAT(report["unexercised"][0].get<std::string>(), HasSubstr("b: cascade = on"));
}

TEST_F(CheckCli, OtherWeightsDivergeWithExitThree) {
  const test::CliResult r = run_cli(args({"--a", "", "--b", "model_path=" + other_}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.out, HasSubstr("DIVERGES at generated token "));
  EXPECT_THAT(r.out, HasSubstr("max logit diff"));
  EXPECT_THAT(r.out, HasSubstr("0 of 2 prompts identical; the outputs DIVERGE"));
  // Said to be by design, not a broken invariance.
  EXPECT_THAT(r.out, HasSubstr("note: model_path differs (a: " + model_ + ", b: " + other_ +
                               "): the sides run different models"));
}

// Two models that tokenize a prompt differently (here one adds BOS) are
// said to, not to have cut the prompt by their settings.
TEST_F(CheckCli, ModelsThatTokenizeDifferentlyAreSaidTo) {
  const std::string bos = test::tiny_model_temp_path("check_cli_bos");
  test::TinyModelSpec spec;
  spec.matrix_type = TensorType::Q8_0;
  spec.seed = 3;
  spec.add_bos = true;
  ASSERT_TRUE(test::write_tiny_gguf(spec, bos).ok());
  const test::CliResult r = run_cli(args({"--a", "", "--b", "model_path=" + bos}));
  fs::remove(bos);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.out, HasSubstr("the sides ran different prompt tokens"));
  EXPECT_THAT(r.out, HasSubstr("the two models tokenize the prompt differently"));
  EXPECT_THAT(r.out, Not(HasSubstr("cut the prompt differently")));
}

// An option no side can use is said, as generate says it; one a side's
// own settings make useful (spec = ngram for --spec-k) is not.
TEST_F(CheckCli, AnOptionNeitherSideUsesIsSaid) {
  const test::CliResult unused = run_cli(args({"--spec-k", "8", "--a", "", "--b", "block_size=8"}));
  EXPECT_EQ(unused.exit_code, 0) << unused.err;
  EXPECT_THAT(unused.err, HasSubstr("warning: --spec-k has no effect with these settings"));
  const test::CliResult used = run_cli(args({"--spec-k", "8", "--a", "", "--b", "spec=ngram"}));
  EXPECT_EQ(used.exit_code, 0) << used.err;
  EXPECT_THAT(used.err, Not(HasSubstr("--spec-k has no effect")));
}

// A side whose context is too short for the reply stops where the other
// goes on: still a divergence (exit 3), and the report says it is one of room,
// not of numbers.
TEST_F(CheckCli, ASideThatRanOutOfContextIsSaidToHaveStoppedThere) {
  const test::CliResult r = run_cli({"check", "--model", model_, "-p", "Hi", "-n", "8", "--threads", "1", "--a",
                                     "max_model_len=6", "--b", ""});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(context_full)"));
  EXPECT_THAT(r.out, HasSubstr("(a stopped where its context was full: the two settings hold different contexts"));
  EXPECT_THAT(r.out, Not(HasSubstr("(b stopped where")));
  // A context a small pool shortens (max_model_len left at 0 on both sides)
  // is a different context too, not the other side's context_overflow.
  const test::CliResult pool = run_cli({"check", "--model", model_, "-p", "Hi", "-n", "8", "--threads", "1", "--a",
                                        "num_blocks=2,block_size=4", "--b", ""});
  EXPECT_EQ(pool.exit_code, 3) << pool.err;
  EXPECT_THAT(pool.out, HasSubstr("(a stopped where its context was full: the two settings hold different contexts"));
  // The same context on both sides: the other side shifted past its end.
  const test::CliResult shifted =
      run_cli({"check", "--model", model_, "-p", "Hi", "-n", "24", "--threads", "1", "--a",
               "max_model_len=16,block_size=4", "--b", "max_model_len=16,block_size=4,context_overflow=shift,context_keep=4"});
  EXPECT_EQ(shifted.exit_code, 3) << shifted.err;
  EXPECT_THAT(shifted.out, HasSubstr("(a stopped where its context was full: the other side's context_overflow went "
                                     "on past it"));
  // Both shift, and a's pool leaves no block for copying the blocks its
  // companions share: its shift preempts one of them (it used to stop a
  // there), so the outputs agree.
  const test::CliResult starved = run_cli(
      {"check", "--model", model_, "-p", "The quick brown fox jumps over the lazy dog again and again", "-n", "40",
       "--threads", "1", "--a", "context_overflow=shift,max_model_len=64,context_keep=8,block_size=8,num_blocks=15,concurrency=8",
       "--b", "context_overflow=shift,max_model_len=64,context_keep=8,block_size=8"});
  EXPECT_EQ(starved.exit_code, 0) << starved.err << starved.out;
  EXPECT_THAT(starved.out, HasSubstr(" preemption"));
  // a's blocks are half the context: context_keep keeps the first, and the
  // second is not whole when the context fills, so a has nothing to drop.
  const test::CliResult stuck = run_cli(
      {"check", "--model", model_, "-p", "The quick brown fox jumps over the lazy dog again and again", "-n", "60",
       "--threads", "1", "--a", "context_overflow=shift,max_model_len=64,context_keep=32,block_size=32",
       "--b", "context_overflow=shift,max_model_len=64,context_keep=32,block_size=8"});
  EXPECT_EQ(stuck.exit_code, 3) << stuck.err << stuck.out;
  EXPECT_THAT(stuck.out, HasSubstr("(a stopped where its context was full: its shift could not be made there"));
}

TEST_F(CheckCli, JsonCarriesTheVerdicts) {
  const test::CliResult r = run_cli(args({"--a", "paged=on", "--b", "kv_mode=contiguous", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["all_identical"], true);
  EXPECT_EQ(j["num_prompts"], 2);
  EXPECT_EQ(j["a"]["settings"]["paged"], "true");
  EXPECT_EQ(j["b"]["settings"]["paged"], "false");
  EXPECT_EQ(j["b"]["settings"]["model_path"], model_);
  ASSERT_EQ(j["prompts"].size(), 2u);
  EXPECT_EQ(j["prompts"][0]["prompt"], "The quick brown fox\njumps over the lazy dog.");
  EXPECT_EQ(j["prompts"][1]["prompt"], "Once upon a time");
  EXPECT_EQ(j["prompts"][0]["first_divergence"], -1);
  EXPECT_EQ(j["prompts"][0]["max_logit_diff"], 0.0);
  EXPECT_EQ(j["prompts"][0]["tokens_a"], j["prompts"][0]["tokens_b"]);

  const test::CliResult d = run_cli(args({"--a", "", "--b", "model_path=" + other_, "--json"}));
  ASSERT_EQ(d.exit_code, 3) << d.err;
  const nlohmann::json dj = nlohmann::json::parse(d.out);
  EXPECT_EQ(dj["all_identical"], false);
  EXPECT_GE(dj["prompts"][0]["first_divergence"].get<int>(), 0);
  EXPECT_NE(dj["prompts"][0]["token_a"], dj["prompts"][0]["token_b"]);
  ASSERT_EQ(dj["expected_differences"].size(), 1u);
  EXPECT_THAT(dj["expected_differences"][0].get<std::string>(), HasSubstr("the sides run different models"));
  EXPECT_TRUE(j["expected_differences"].empty()) << "paging keeps the numbers";
}

// --chat runs each prompt as a user message through the model's template,
// as generate --chat and the app's chat submit it: more prompt tokens than
// the raw text, and said so in the text and the JSON.
TEST_F(CheckCli, ChatPromptsRunThroughTheTemplate) {
  const test::CliResult raw = run_cli({"check", "--model", model_, "-p", "Hi", "-n", "4", "--threads", "1", "--a", "",
                                       "--b", "block_size=4", "--json"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  const test::CliResult chat = run_cli({"check", "--model", model_, "-p", "Hi", "-n", "4", "--threads", "1", "--chat",
                                        "--system", "Be brief.", "--a", "", "--b", "block_size=4", "--json"});
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  const nlohmann::json r = nlohmann::json::parse(raw.out), c = nlohmann::json::parse(chat.out);
  EXPECT_EQ(r["prompts"][0]["chat"], false);
  EXPECT_EQ(c["prompts"][0]["chat"], true);
  EXPECT_EQ(c["prompts"][0]["prompt"], "Hi");
  EXPECT_GT(c["prompts"][0]["num_prompt_tokens"].get<int>(), r["prompts"][0]["num_prompt_tokens"].get<int>() + 5);
  const test::CliResult text = run_cli({"check", "--model", model_, "-p", "Hi", "-n", "4", "--threads", "1", "--chat",
                                        "--a", "", "--b", "block_size=4"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("[1/1] 'Hi' (as a chat, through the model's template)"));
}

TEST_F(CheckCli, BadInputIsAUsageError) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {args({"--a", "kv_dtype=q8", "--b", ""}), "--a: unknown setting 'kv_dtype' (known: model_path, threads"},
      {args({"--a", "kv_type=q8", "--b", ""}), "--a: kv_cache_type: 'q8' is not one of f32, f16, bf16, q8_0"},
      {args({"--a", "", "--b", "block_size=zero"}), "--b: block_size: 'zero' is not a whole number"},
      {args({"--a", "", "--b", "concurrency=300"}), "--b: concurrency = 300 is out of range [1, 256]"},
      {args({"--a", "", "--b", "", "--temp", "0.7"}), "needs --seed"},
      {{"check", "--model", model_, "--a", "", "--b", ""}, "no prompts"},
      {{"check", "--model", model_, "--prompts", model_ + ".missing", "--a", "", "--b", ""}, "--prompts: "},
      {{"check", "--model", model_, "-p", "hi", "--b", ""}, "--a is required"},
      {args({"--a", "", "--b", "", "--system", "Be brief."}), "--system needs --chat"},
  };
  for (const Case& c : cases) {
    const test::CliResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.message << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  // A prompts file of blank lines names the file, not "give --prompts".
  const std::string blank = model_ + ".blank.txt";
  std::ofstream(blank) << "\n  \n";
  const test::CliResult r = run_cli({"check", "--model", model_, "--prompts", blank, "--a", "", "--b", ""});
  std::remove(blank.c_str());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("holds no prompt (prompts are blocks of text separated by blank lines)"));
}

// A bad key is a usage error even where the model is missing (checked first).
TEST_F(CheckCli, BadKeyBeforeMissingModel) {
  const test::CliResult r =
      run_cli({"check", "--model", model_ + ".missing", "-p", "hi", "--a", "pp=2", "--b", ""});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("unknown setting 'pp'"));
  const test::CliResult missing = run_cli({"check", "--model", model_ + ".missing", "-p", "hi", "--a", "", "--b", ""});
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("does not exist"));
}

}  // namespace
}  // namespace kvscope
