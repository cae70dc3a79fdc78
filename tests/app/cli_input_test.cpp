// kvscope-cli on a random tiny model (no download needed): generate, chat and
// tokenize on a Hugging Face directory as on a GGUF file, the prompt ids
// `generate --json` prints being the engine's own; and bad input answered
// clearly: --seed -1 (random, like 0; the seed used is printed), a bad seed,
// a directory given as --prompt-file, tokenize --file or --trace, a directory
// that is not a model given as --model, text with no token, a model name
// with terminal control characters. Label: unit.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "app/cli_runner.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

namespace fs = std::filesystem;
using test::run_cli;
using ::testing::HasSubstr;
using ::testing::Not;

class CliInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_ = test::tiny_model_temp_path("cli_input");
    gguf_ = base_;
    hf_ = base_ + ".hf";
    test::TinyModelSpec spec;
    ASSERT_TRUE(test::write_tiny_gguf(spec, gguf_).ok());
    ASSERT_TRUE(test::write_tiny_hf_dir(spec, hf_).ok());
    fs::create_directories(base_ + ".empty_dir");
  }
  static void TearDownTestSuite() {
    fs::remove(gguf_);
    fs::remove_all(hf_);
    fs::remove_all(base_ + ".empty_dir");
  }
  // Greedy unless `temp` says otherwise.
  static nlohmann::json generate_json(const std::string& model, std::vector<std::string> extra = {},
                                      const std::string& temp = "0") {
    std::vector<std::string> args = {"generate", "--model", model, "-p", "Hello there", "-n", "4", "--temp", temp,
                                     "--ignore-eos", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const test::CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  }
  static std::string base_, gguf_, hf_;
};

std::string CliInput::base_, CliInput::gguf_, CliInput::hf_;

// --json says what context overflow dropped: nothing in a reply that fits;
// with shift at a 48-token context a 100-token reply shifts, and the dropped
// count is the prompt plus reply that no longer fit.
TEST_F(CliInput, GenerateJsonCountsTheTokensContextOverflowDropped) {
  const nlohmann::json fits = generate_json(gguf_);
  ASSERT_FALSE(fits.is_null());
  EXPECT_EQ(fits["context"]["overflow_shifts"], 0);
  EXPECT_EQ(fits["context"]["dropped_tokens"], 0);

  const test::CliResult r =
      run_cli({"generate", "--model", gguf_, "-p", "Hello there", "-n", "100", "--temp", "0", "--ignore-eos",
               "--ctx", "48", "--block-size", "4", "--context-overflow", "shift", "--context-keep", "4", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json shifted = nlohmann::json::parse(r.out);
  EXPECT_EQ(shifted["num_generated_tokens"], 100);
  EXPECT_GT(shifted["context"]["overflow_shifts"].get<int>(), 0);
  const int dropped = shifted["context"]["dropped_tokens"].get<int>();
  const int total = shifted["num_prompt_tokens"].get<int>() + 100;
  // Whole blocks go, and what stays fits in the context.
  EXPECT_EQ(dropped % 4, 0);
  EXPECT_GE(dropped, total - 48);
  EXPECT_LT(dropped, total);
}

TEST_F(CliInput, GenerateOnAHuggingFaceDirectoryMatchesTheGguf) {
  const nlohmann::json hf = generate_json(hf_);
  const nlohmann::json gguf = generate_json(gguf_);
  ASSERT_FALSE(hf.is_null());
  ASSERT_FALSE(gguf.is_null());
  // The ids the engine ran, reported back: the tokenizer's ids for the text.
  const test::CliResult tok =
      run_cli({"tokenize", "--model", hf_, "--parse-special", "--json", "--text", "Hello there"});
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_EQ(hf["prompt_ids"], nlohmann::json::parse(tok.out)["ids"]);
  EXPECT_EQ(hf["prompt_ids"], gguf["prompt_ids"]);
  EXPECT_EQ(hf["num_generated_tokens"], 4);
  EXPECT_EQ(hf["generated_ids"], gguf["generated_ids"]);  // same weights, greedy
}

TEST_F(CliInput, GenerateChatAndChatOnAHuggingFaceDirectory) {
  const nlohmann::json chat = generate_json(hf_, {"--chat", "--system", "Be brief."});
  ASSERT_FALSE(chat.is_null());
  const std::vector<int> ids = chat["prompt_ids"];
  EXPECT_EQ(ids.front(), test::kTinyImStart);  // rendered with the ChatML template by the engine
  EXPECT_EQ(std::count(ids.begin(), ids.end(), test::kTinyImStart), 3);  // system, user, assistant

  const test::CliResult r = run_cli({"chat", "--model", hf_, "--temp", "0", "-n", "4"}, "Hello\nAgain\n/exit\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("error")));
}

// The prompt (generate) and the text (tokenize) may also come alone, without
// --prompt / --text: the same ids either way; and still not with a file.
TEST_F(CliInput, PromptAndTextMayBePositional) {
  const test::CliResult flagged = run_cli({"tokenize", "--model", gguf_, "--json", "--text", "Hello there"});
  const test::CliResult alone = run_cli({"tokenize", "--model", gguf_, "--json", "Hello there"});
  ASSERT_EQ(flagged.exit_code, 0) << flagged.err;
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(nlohmann::json::parse(alone.out)["ids"], nlohmann::json::parse(flagged.out)["ids"]);

  const std::vector<std::string> common = {"generate", "--model", gguf_, "--json", "--temp", "0", "-n", "3"};
  std::vector<std::string> with_flag = common, positional = common;
  with_flag.insert(with_flag.end(), {"--prompt", "Hello there"});
  positional.push_back("Hello there");
  const test::CliResult a = run_cli(with_flag), b = run_cli(positional);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(b.out)["prompt_ids"], nlohmann::json::parse(a.out)["prompt_ids"]);
  EXPECT_EQ(nlohmann::json::parse(b.out)["generated_ids"], nlohmann::json::parse(a.out)["generated_ids"]);

  // A --stop before the prompt takes one string, not the prompt too.
  std::vector<std::string> after_stop = common;
  after_stop.insert(after_stop.end(), {"--stop", "zzz", "--stop", "qqq", "Hello there"});
  const test::CliResult c = run_cli(after_stop);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out)["prompt_ids"], nlohmann::json::parse(a.out)["prompt_ids"]);

  std::vector<std::string> both = common;
  both.insert(both.end(), {"--prompt-file", "/dev/null", "Hello"});
  const test::CliResult refused = run_cli(both);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("excludes"), std::string::npos) << refused.err;
}

TEST_F(CliInput, SeedMinusOneAndZeroPickARandomSeedAndPrintIt) {
  const nlohmann::json a = generate_json(gguf_, {"--seed", "-1"}, "1");
  const nlohmann::json b = generate_json(gguf_, {"--seed", "-1"}, "1");
  const nlohmann::json c = generate_json(gguf_, {"--seed", "0"}, "1");
  ASSERT_FALSE(a.is_null() || b.is_null() || c.is_null());
  const uint64_t sa = a["seed"], sb = b["seed"], sc = c["seed"];
  EXPECT_NE(sa, 0u);
  EXPECT_NE(sa, ~uint64_t{0});  // -1 used to wrap to 2^64-1, a fixed seed
  EXPECT_NE(sa, sb);            // random each time (equal with probability 2^-64)
  EXPECT_NE(sc, 0u);
  // The printed seed reproduces the run.
  const nlohmann::json again = generate_json(gguf_, {"--seed", std::to_string(sa)}, "1");
  ASSERT_FALSE(again.is_null());
  EXPECT_EQ(again["seed"], a["seed"]);
  EXPECT_EQ(again["generated_ids"], a["generated_ids"]);
}

TEST_F(CliInput, BadSeedIsAUsageError) {
  for (const char* bad : {"-2", "abc", "1.5", "18446744073709551616"}) {
    const test::CliResult r = run_cli({"generate", "--model", gguf_, "-p", "hi", "--seed", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("is not a seed")) << bad;
  }
}

TEST_F(CliInput, DirectoryGivenAsAFileSaysSo) {
  const std::string dir = base_ + ".empty_dir";
  const test::CliResult prompt = run_cli({"generate", "--model", gguf_, "--prompt-file", dir});
  EXPECT_EQ(prompt.exit_code, 2);
  EXPECT_THAT(prompt.err, HasSubstr("--prompt-file: '" + dir + "' is a directory, not a file"));

  const test::CliResult tokenize = run_cli({"tokenize", "--model", gguf_, "--file", dir});
  EXPECT_EQ(tokenize.exit_code, 2);
  EXPECT_THAT(tokenize.err, HasSubstr("is a directory, not a file"));

  const test::CliResult trace = run_cli({"generate", "--model", gguf_, "-p", "hi", "-n", "1", "--trace", dir});
  EXPECT_EQ(trace.exit_code, 2);
  EXPECT_THAT(trace.err, HasSubstr("--trace: '" + dir + "' is a directory, not a file"));

  const test::CliResult missing =
      run_cli({"generate", "--model", gguf_, "-p", "hi", "--trace", dir + "/no/such/t.json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("does not exist"));

  const test::CliResult model = run_cli({"generate", "--model", dir, "-p", "hi"});
  EXPECT_EQ(model.exit_code, 1);
  EXPECT_THAT(model.err, HasSubstr("not a Hugging Face model directory (it has no config.json)"));
}

// A reply stopped by a full context names what to change: the KV pool when
// it set the limit (--ctx would not help), else --ctx; shift is suggested
// only when it is not already on.
TEST_F(CliInput, AFullContextNoteNamesWhatSetTheLimit) {
  const test::CliResult pool =
      run_cli({"generate", "--model", gguf_, "-p", "hi", "-n", "100", "--ignore-eos", "--num-blocks", "2"});
  ASSERT_EQ(pool.exit_code, 0) << pool.err;
  EXPECT_THAT(pool.err, HasSubstr("the KV pool holds 32 tokens (2 blocks of 16): --kv-budget or --num-blocks "
                                  "raises it, --context-overflow shift goes on past it"));
  const test::CliResult ctx = run_cli({"generate", "--model", gguf_, "-p", "hi", "-n", "100", "--ignore-eos", "--ctx", "48"});
  ASSERT_EQ(ctx.exit_code, 0) << ctx.err;
  EXPECT_THAT(ctx.err, HasSubstr("--ctx raises the limit (the model's context is 512)"));
}

// model-info plans a draft model only if its vocabulary can be the model's,
// as generate would refuse it (it printed a full plan for Gemma's 262k
// vocabulary beside SmolLM2's 49k).
TEST_F(CliInput, ModelInfoRefusesADraftOfAnotherVocabulary) {
  test::TinyModelSpec spec;
  spec.vocab = 320;
  const std::string other = base_ + ".vocab320.gguf";
  ASSERT_TRUE(test::write_tiny_gguf(spec, other).ok());
  const test::CliResult r = run_cli({"model-info", "--model", gguf_, "--spec", "draft", "--spec-draft-model", other});
  const test::CliResult same = run_cli({"model-info", "--model", gguf_, "--spec", "draft", "--spec-draft-model", gguf_});
  const test::CliResult alone = run_cli({"model-info", "--model", gguf_, "--json"});
  const test::CliResult with_draft =
      run_cli({"model-info", "--model", gguf_, "--spec", "draft", "--spec-draft-model", gguf_, "--json"});
  fs::remove(other);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("has 320 logits but the model"));
  ASSERT_EQ(same.exit_code, 0) << same.err;
  // The memory figures hold the draft model's weights and K/V too (the
  // plan's blocks did; the per-token and full-context lines left them out).
  // The tiny model's f32 K and V: 512 bytes a token, its own again as draft.
  EXPECT_THAT(same.out, HasSubstr("KV cache    512 B per token (f32 K and V) + 512 B the draft model's, 512.0 KiB at 512 tokens"));
  EXPECT_THAT(same.out, HasSubstr(", with the draft model's"));
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  ASSERT_EQ(with_draft.exit_code, 0) << with_draft.err;
  const nlohmann::json a = nlohmann::json::parse(alone.out), d = nlohmann::json::parse(with_draft.out);
  EXPECT_EQ(d["draft_kv_bytes_per_token"], 512);
  EXPECT_EQ(d["draft_weight_bytes"], a["weight_bytes"]);
  EXPECT_EQ(d["memory_bytes_full_context"].get<int64_t>(),
            a["memory_bytes_full_context"].get<int64_t>() + a["weight_bytes"].get<int64_t>() + 512 * 512);
  EXPECT_FALSE(a.contains("draft_kv_bytes_per_token"));
  // A plan that does not fit still counts the draft: that is when its size is asked.
  const test::CliResult small = run_cli({"model-info", "--model", gguf_, "--spec", "draft", "--spec-draft-model",
                                         gguf_, "--kv-budget", "1K"});
  EXPECT_EQ(small.exit_code, 1) << small.err;
  EXPECT_THAT(small.out, HasSubstr("KV cache    512 B per token (f32 K and V) + 512 B the draft model's"));
}

// An option that does not apply under the other settings is said to be
// ignored (--spec-k without --spec, --swap-space under recompute), not
// silently dropped; one that applies is not.
TEST_F(CliInput, OptionsWithoutEffectAreSaidToBeIgnored) {
  const test::CliResult r = run_cli({"generate", "--model", gguf_, "-p", "hi", "-n", "1", "--spec-k", "4",
                                     "--swap-space", "64M", "--preemption", "recompute"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: --spec-k has no effect with these settings"));
  EXPECT_THAT(r.err, HasSubstr("warning: --swap-space has no effect with these settings"));
  const test::CliResult on = run_cli({"generate", "--model", gguf_, "-p", "hi", "-n", "1", "--spec", "ngram",
                                      "--spec-k", "4"});
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_THAT(on.err, Not(HasSubstr("has no effect")));
}

// model-info says whether chat prompts use the file's template or, with
// none in the file, a built-in format (nothing else says so before a chat).
TEST_F(CliInput, ModelInfoSaysWhichChatFormatApplies) {
  const test::CliResult with = run_cli({"model-info", "--model", gguf_});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_THAT(with.out, HasSubstr("chat        the file's chat template (Jinja)"));
  EXPECT_EQ(nlohmann::json::parse(run_cli({"model-info", "--model", gguf_, "--json"}).out)["has_chat_template"], true);

  test::TinyModelSpec spec;
  spec.gguf_str["tokenizer.chat_template"] = "";
  const std::string none = base_ + ".no_template.gguf";
  ASSERT_TRUE(test::write_tiny_gguf(spec, none).ok());
  const test::CliResult without = run_cli({"model-info", "--model", none});
  const test::CliResult without_json = run_cli({"model-info", "--model", none, "--json"});
  fs::remove(none);
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_THAT(without.out, HasSubstr("chat        no chat template in the file: chat prompts use a built-in format"));
  EXPECT_EQ(nlohmann::json::parse(without_json.out)["has_chat_template"], false);
}

// An output path is never a file the command reads nor any GGUF file: a
// slip of --trace overwrote the model with a 2 KB trace. An empty path is
// refused rather than taken as "no trace", and bench-seeds checks its
// --out-dir before minutes of runs.
TEST_F(CliInput, OutputPathsNeverOverwriteAModel) {
  const std::string copy = base_ + ".copy.gguf";
  fs::copy_file(gguf_, copy, fs::copy_options::overwrite_existing);
  const auto size = fs::file_size(copy);
  const test::CliResult self = run_cli({"generate", "--model", copy, "-p", "hi", "-n", "1", "--trace", copy});
  EXPECT_EQ(self.exit_code, 2);
  EXPECT_THAT(self.err, HasSubstr("--trace: '" + copy + "' is the model this command reads"));
  const test::CliResult other = run_cli({"generate", "--model", gguf_, "-p", "hi", "-n", "1", "--trace", copy});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_THAT(other.err, HasSubstr("is a GGUF model file"));
  const test::CliResult bench = run_cli({"bench", "--model", gguf_, "--out", copy});
  EXPECT_EQ(bench.exit_code, 2);
  EXPECT_THAT(bench.err, HasSubstr("--out: '" + copy + "' is a GGUF model file"));
  EXPECT_EQ(fs::file_size(copy), size) << "the model is untouched";
  fs::remove(copy);

  // A pipe is written, not read for a model's magic (which would block).
  const std::string fifo = base_ + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const test::CliResult piped = test::run_program(
      "/bin/sh", {"-c", "cat " + test::shell_quote(fifo) + " >/dev/null & " + test::shell_quote(KVSCOPE_CLI_PATH) +
                            " generate --model " + test::shell_quote(gguf_) + " -p hi -n 1 --trace " +
                            test::shell_quote(fifo) + "; echo rc=$?; wait"});
  fs::remove(fifo);
  EXPECT_THAT(piped.out, HasSubstr("rc=0")) << piped.err;

  const test::CliResult empty = run_cli({"generate", "--model", gguf_, "-p", "hi", "-n", "1", "--trace", ""});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_THAT(empty.err, HasSubstr("--trace: an empty path"));

  const test::CliResult seeds = run_cli({"bench-seeds", "--model", gguf_, "--quick", "--out-dir", gguf_});
  EXPECT_EQ(seeds.exit_code, 2);
  EXPECT_THAT(seeds.err, HasSubstr("--out-dir: '" + gguf_ + "' is a file, not a folder"));
  EXPECT_THAT(seeds.err, Not(HasSubstr("bench-seeds [1/"))) << "refused before any run";
}

// A trace that cannot be written (a full disk: /dev/full) costs the trace,
// not the reply it describes: the JSON is printed, then the error, exit 1.
TEST_F(CliInput, ATraceThatCannotBeWrittenKeepsTheResult) {
  const test::CliResult r =
      run_cli({"generate", "--model", gguf_, "-p", "hi", "-n", "3", "--ignore-eos", "--json", "--trace", "/dev/full"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("/dev/full"));
  ASSERT_FALSE(r.out.empty()) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["num_generated_tokens"], 3);
}

// Ctrl-C stops generate's reply, not the program: the text so far ends with
// a newline, the trace is written, and the exit status is 130. The signal is
// sent once the reply streams (the handler is in place by then).
TEST_F(CliInput, CtrlCStopsTheReplyAndStillWritesTheTrace) {
  const std::string trace = base_ + ".interrupted.json", out = base_ + ".interrupted.out";
  const std::string script =
      test::shell_quote(KVSCOPE_CLI_PATH) + " generate --model " + test::shell_quote(gguf_) +
      " -p 'Once upon a time' -n 1000000 --ignore-eos --context-overflow shift --trace " +
      test::shell_quote(trace) + " >" + test::shell_quote(out) +
      " & pid=$!; i=0; while [ ! -s " + test::shell_quote(out) +
      " ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; kill -INT $pid; wait $pid; echo $?";
  const test::CliResult r = test::run_program("/bin/sh", {"-c", script});
  EXPECT_EQ(r.out, "130\n") << r.err;
  std::ifstream trace_file(trace);
  ASSERT_TRUE(trace_file.good()) << "the trace was written";
  const nlohmann::json events = nlohmann::json::parse(trace_file);
  EXPECT_FALSE(events.empty());
  std::ifstream out_file(out, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(out_file)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  fs::remove(trace);
  fs::remove(out);
}

// A file far larger than any prompt (a model file given by mistake) is
// refused before it is read, not tokenised for minutes into gigabytes.
TEST_F(CliInput, AFileTooLargeForTextIsRefusedUpFront) {
  const std::string big = base_ + ".big.txt";
  {
    std::ofstream out(big, std::ios::binary);
    out.seekp(17 << 20);  // sparse: 17 MiB without writing them
    out.put('x');
  }
  const test::CliResult prompt = run_cli({"generate", "--model", gguf_, "--prompt-file", big});
  const test::CliResult tokenize = run_cli({"tokenize", "--model", gguf_, "--file", big, "--json"});
  std::remove(big.c_str());
  EXPECT_EQ(prompt.exit_code, 2);
  EXPECT_THAT(prompt.err, HasSubstr("is 17.0 MiB: text files are read up to 16 MiB"));
  EXPECT_EQ(tokenize.exit_code, 2);
  EXPECT_THAT(tokenize.err, HasSubstr("text files are read up to 16 MiB"));
}

TEST_F(CliInput, TextWithoutTokensWarnsAndStillRuns) {
  const test::CliResult r = run_cli({"generate", "--model", gguf_, "-p", "a\xFF" "b", "-n", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: prompt: the text has 1 byte that is not valid UTF-8"));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["warnings"].size(), 1u);
  for (int id : j["prompt_ids"]) EXPECT_LT(id, test::kTinyEndOfText);  // no control token

  const test::CliResult tok = run_cli({"tokenize", "--model", hf_, "--text", "a\xFF" "b"});
  EXPECT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_THAT(tok.err, HasSubstr("warning: the text has 1 byte that is not valid UTF-8"));
}

// model-info answers "would generate run this?" for files whose metadata
// reads but whose model does not load (exit 1, with generate's reason), and
// a vocabulary shorter than the embedding is refused (its ids past the list
// were sampled and showed no text).
TEST_F(CliInput, ModelInfoRefusesWhatGenerateRefuses) {
  struct Case {
    std::string what;
    test::TinyModelSpec spec;
    std::string reason;
  };
  std::vector<Case> cases(3);
  cases[0].what = "ffn length unlike the tensors";
  cases[0].spec.gguf_u32["llama.feed_forward_length"] = 1000;
  cases[0].reason = "ffn_gate.weight";
  cases[1].what = "unknown pre-tokenizer";
  cases[1].spec.tokenizer_pre = "no-such-pre";
  cases[1].reason = "no-such-pre";
  cases[2].what = "vocabulary shorter than the embedding";
  cases[2].spec.gguf_num_tokens = 290;
  cases[2].reason = "tokenizer.ggml.tokens has 290 tokens but token_embd.weight has 300 rows";
  for (const Case& c : cases) {
    const std::string path = base_ + ".bad.gguf";
    ASSERT_TRUE(test::write_tiny_gguf(c.spec, path).ok()) << c.what;
    const test::CliResult info = run_cli({"model-info", "--model", path});
    const test::CliResult info_json = run_cli({"model-info", "--model", path, "--json"});
    const test::CliResult gen = run_cli({"generate", "--model", path, "-p", "hi", "-n", "1"});
    std::remove(path.c_str());
    EXPECT_EQ(info.exit_code, 1) << c.what << "\n" << info.out;
    EXPECT_THAT(info.out, HasSubstr("does not load: ")) << c.what;
    EXPECT_THAT(info.out, HasSubstr(c.reason)) << c.what;
    EXPECT_EQ(info_json.exit_code, 1) << c.what;
    if (info_json.exit_code == 1) {
      EXPECT_THAT(nlohmann::json::parse(info_json.out)["load_error"].get<std::string>(), HasSubstr(c.reason));
    }
    EXPECT_EQ(gen.exit_code, 1) << c.what;
    EXPECT_THAT(gen.err, HasSubstr(c.reason)) << c.what;
  }
  // A file that loads says nothing of the kind.
  const test::CliResult ok = run_cli({"model-info", "--model", gguf_});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, Not(HasSubstr("does not load")));
}

// perplexity warns of text without tokens as generate and tokenize do (it
// scored a file of invalid UTF-8 without a word).
TEST_F(CliInput, PerplexityWarnsOfTextWithoutTokens) {
  const std::string file = base_ + ".ppl.txt";
  {
    std::ofstream out(file, std::ios::binary);
    for (int i = 0; i < 100; ++i) out << "some text \xFF here. ";
  }
  const test::CliResult r = run_cli({"perplexity", "--model", gguf_, "-f", file, "--window", "32", "--windows", "1"});
  std::remove(file.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: " + file + ": the text has 100 bytes that are not valid UTF-8"));
}

// CLI11's own parse errors carry the prefix every other error has.
TEST_F(CliInput, ParseErrorsReadAsTheOtherErrors) {
  const test::CliResult r = run_cli({"generate", "--model", gguf_, "-p", "hi", "--temp", "abc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("kvscope-cli: error: ", 0), 0u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--temp"));
}

// A negative --windows is refused with its range, not DBL_MAX's 309 digits.
TEST_F(CliInput, NegativeWindowCountSaysItsRange) {
  const test::CliResult r = run_cli({"perplexity", "--model", gguf_, "-f", gguf_, "--windows", "-1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--windows"));
  EXPECT_THAT(r.err, HasSubstr("2147483647"));
  EXPECT_THAT(r.err, Not(HasSubstr("17976931")));
}

// A model file's strings reach the terminal escaped: its name with ESC, BEL,
// CR, a C1 control (U+009B, a CSI on some terminals) and bytes that are not
// UTF-8 must not recolour or rewrite the user's terminal lines.
TEST_F(CliInput, ModelFileStringsCannotDriveTheTerminal) {
  const std::string path = base_ + ".name.gguf";
  test::TinyModelSpec spec;
  spec.gguf_str["general.name"] = "\x1b[31mEVIL\x07\r\nFAKE \xc2\x9b" "2J caf\xc3\xa9 \xff\xfe";
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  const test::CliResult r = run_cli({"model-info", "--model", path});
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char bad : {'\x1b', '\x07', '\r', '\xff', '\xfe'}) {
    EXPECT_EQ(r.out.find(bad), std::string::npos) << "byte " << static_cast<int>(static_cast<unsigned char>(bad));
  }
  EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos);
  EXPECT_THAT(r.out, HasSubstr("\\x1b[31mEVIL\\x07\\r\\nFAKE \\xc2\\x9b2J caf\xc3\xa9 \\xff\\xfe"));
}

}  // namespace
}  // namespace kvscope
