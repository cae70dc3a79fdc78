// The invariance checker (kvscope/invariance_check.h) on its own (label
// `unit`): side specs parsed through the setting table, the comparator on
// hand-built records (a report's notes: invariance_report_test.cpp), and whole checks on a random tiny model, where every
// serving-mode pair must give identical greedy tokens and bit-identical
// logits, and two different models must not.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kvscope/engine.h"
#include "kvscope/invariance_check.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

// ---- parse_invariance_side ------------------------------------------------------

// validate() wants a model file named; it is not opened here.
EngineConfig with_model() {
  EngineConfig c;
  c.model_path = "m.gguf";
  return c;
}

TEST(InvarianceSide, TableKeysSetTheirRows) {
  const EngineConfig base = with_model();
  auto side = parse_invariance_side(
      "threads=2,block_size=1,paged=off,prefix_caching=false,cascade=on,max_batched_tokens=7,concurrency=8", base);
  ASSERT_TRUE(side.ok()) << side.error();
  EXPECT_EQ(side->config.model_path, "m.gguf");
  EXPECT_EQ(side->config.num_threads, 2);
  EXPECT_EQ(side->config.block_size, 1);
  EXPECT_FALSE(side->config.paged);
  EXPECT_FALSE(side->config.prefix_caching);
  EXPECT_EQ(side->config.cascade, CascadeMode::On);
  EXPECT_EQ(side->config.max_batched_tokens, 7);
  EXPECT_EQ(side->concurrency, 8);
  EXPECT_EQ(side->spec,
            "threads=2,block_size=1,paged=off,prefix_caching=false,cascade=on,max_batched_tokens=7,concurrency=8");
}

TEST(InvarianceSide, EmptySpecIsTheBase) {
  EngineConfig base = with_model();
  base.block_size = 32;
  auto side = parse_invariance_side("  ", base);
  ASSERT_TRUE(side.ok()) << side.error();
  EXPECT_TRUE(same_settings(side->config, base));
  EXPECT_EQ(side->concurrency, 1);
  // A trailing or doubled comma is no item (it was "'' is not key=value").
  auto trailing = parse_invariance_side("block_size=8,,", base);
  ASSERT_TRUE(trailing.ok()) << trailing.error();
  EXPECT_EQ(trailing->config.block_size, 8);
}

TEST(InvarianceSide, AliasesMapOntoTableRows) {
  auto side = parse_invariance_side("kv_mode=contiguous,prefix_cache=off,chunk=7", with_model());
  ASSERT_TRUE(side.ok()) << side.error();
  EXPECT_FALSE(side->config.paged);
  EXPECT_FALSE(side->config.prefix_caching);
  EXPECT_EQ(side->config.max_batched_tokens, 7);

  EngineConfig off = with_model();
  off.paged = false;
  off.prefix_caching = false;
  auto on = parse_invariance_side("kv_mode=paged,prefix_cache=on", off);
  ASSERT_TRUE(on.ok()) << on.error();
  EXPECT_TRUE(on->config.paged);
  EXPECT_TRUE(on->config.prefix_caching);

  // Every alias names a real row, so the alias table cannot drift from the setting table.
  for (const InvarianceAlias& alias : invariance_aliases()) {
    EXPECT_NE(find_setting(alias.setting), nullptr) << alias.key;
  }
}

TEST(InvarianceSide, CommandLineOptionNamesNameTheirSettings) {
  // What someone who learned `generate --ctx 64 --no-paging` types.
  auto side = parse_invariance_side("ctx=64,paging=off,--block-size=8,prefix-cache=off,max-batched-tokens=9", with_model());
  ASSERT_TRUE(side.ok()) << side.error();
  EXPECT_EQ(side->config.max_model_len, 64);
  EXPECT_FALSE(side->config.paged);
  EXPECT_EQ(side->config.block_size, 8);
  EXPECT_FALSE(side->config.prefix_caching);
  EXPECT_EQ(side->config.max_batched_tokens, 9);
  // Every row's option finds its row.
  for (const SettingSpec& row : engine_settings()) {
    EXPECT_EQ(find_setting_by_cli_option(row.cli_option()), &row) << row.key;
    EXPECT_EQ(find_setting_by_cli_option("--" + row.cli_option()), &row) << row.key;
  }
  EXPECT_EQ(find_setting_by_cli_option("--"), nullptr);
  // One setting twice under two names is still refused.
  auto twice = parse_invariance_side("max_model_len=64,ctx=32", with_model());
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().find("'max_model_len' is given twice (as ctx)"), std::string::npos) << twice.error();
}

TEST(InvarianceSide, UnknownKeyListsTheKnownOnes) {
  for (const char* key : {"kv_dtype", "speculative", "pp", "device"}) {
    auto side = parse_invariance_side(std::string(key) + "=1", with_model());
    ASSERT_FALSE(side.ok()) << key;
    EXPECT_NE(side.error().find("unknown setting '" + std::string(key) + "'"), std::string::npos) << side.error();
    for (const std::string& known : invariance_keys()) {
      EXPECT_NE(side.error().find(known), std::string::npos) << known << " missing from: " << side.error();
    }
  }
  // The known keys: the whole table, then concurrency, then the aliases.
  const std::vector<std::string> keys = invariance_keys();
  ASSERT_EQ(keys.size(), engine_settings().size() + 1 + invariance_aliases().size());
  EXPECT_EQ(keys[engine_settings().size()], "concurrency");
}

TEST(InvarianceSide, BadValuesSayWhich) {
  struct Case {
    const char* spec;
    const char* message;
  };
  for (const Case& c : {Case{"block_size=x", "block_size: 'x' is not a whole number"},
                        Case{"paged=maybe", "paged: 'maybe' is not true or false"},
                        Case{"cascade=sometimes", "cascade: 'sometimes' is not one of off, auto, on"},
                        Case{"kv_mode=flat", "kv_mode: 'flat' is not one of paged, contiguous"},
                        Case{"block_size=0", "block size = 0 is out of range [1, 2048]"},
                        Case{"block_size", "'block_size' is not key=value"},
                        Case{"=3", "'=3' is not key=value"},
                        Case{"block_size=1,block_size=2", "'block_size' is given twice"},
                        Case{"paged=on,kv_mode=paged", "'paged' is given twice (as kv_mode)"}}) {
    auto side = parse_invariance_side(c.spec, with_model());
    ASSERT_FALSE(side.ok()) << c.spec;
    EXPECT_NE(side.error().find(c.message), std::string::npos) << c.spec << " -> " << side.error();
  }
}

TEST(InvarianceSide, ConcurrencyRange) {
  for (int32_t n : {1, 16, 256}) {
    auto side = parse_invariance_side("concurrency=" + std::to_string(n), with_model());
    ASSERT_TRUE(side.ok()) << side.error();
    EXPECT_EQ(side->concurrency, n);
  }
  for (const char* bad : {"0", "257", "-1"}) {
    auto side = parse_invariance_side(std::string("concurrency=") + bad, with_model());
    ASSERT_FALSE(side.ok()) << bad;
    EXPECT_NE(side.error().find("concurrency = " + std::string(bad) + " is out of range [1, 256]"),
              std::string::npos)
        << side.error();
  }
  auto words = parse_invariance_side("concurrency=lots", with_model());
  ASSERT_FALSE(words.ok());
  EXPECT_NE(words.error().find("concurrency: 'lots' is not a whole number"), std::string::npos) << words.error();
}

// ---- compare_runs ---------------------------------------------------------------

// A run whose logits at position i are `rows[i]` (vocabulary of 3).
GenerationRecord record(std::vector<int32_t> tokens, std::vector<std::vector<float>> rows) {
  GenerationRecord r;
  for (size_t i = 0; i < tokens.size(); ++i) {
    r.positions.push_back(10 + static_cast<int32_t>(i));
    r.token_texts.push_back(std::string("t").append(std::to_string(tokens[i])));
  }
  r.tokens = std::move(tokens);
  r.logits = std::move(rows);
  r.finish = "length";
  return r;
}

TEST(CompareRuns, IdenticalRunsAreIdenticalWithNoLogitDifference) {
  const GenerationRecord a = record({1, 2, 0}, {{0, 1, 0}, {0, 0, 1}, {1, 0, 0}});
  const PromptVerdict v = compare_runs(a, a);
  EXPECT_TRUE(v.identical);
  EXPECT_TRUE(v.logits_identical);
  EXPECT_EQ(v.first_divergence, -1);
  EXPECT_EQ(v.divergence_position, -1);
  EXPECT_EQ(v.max_logit_diff, 0.0f);
  EXPECT_EQ(v.tokens_a, v.tokens_b);
}

TEST(CompareRuns, SameTokensWithDriftingLogitsAreIdenticalButNotBitwise) {
  const GenerationRecord a = record({1, 2}, {{0, 1, 0}, {0, 0, 1}});
  const GenerationRecord b = record({1, 2}, {{0, 1, 0.125f}, {0, 0, 1}});
  const PromptVerdict v = compare_runs(a, b);
  EXPECT_TRUE(v.identical);
  EXPECT_FALSE(v.logits_identical);
  EXPECT_EQ(v.max_logit_diff, 0.125f);
}

TEST(CompareRuns, DivergenceReportsTokensAndLogitDriftUpToThere) {
  // Largest differences: 0.25 at 1, 1 at the divergence (2), 9 after it (not counted).
  const GenerationRecord a = record({1, 2, 0, 1}, {{0, 1, 0}, {0, 0, 1}, {1, 0.5f, 0}, {0, 9, 0}});
  const GenerationRecord b = record({1, 2, 1, 1}, {{0, 1, 0}, {0, 0.25f, 1}, {1, 1.5f, 0.5f}, {0, 0, 0}});
  PromptVerdict v = compare_runs(a, b);
  EXPECT_FALSE(v.identical);
  EXPECT_FALSE(v.logits_identical);
  EXPECT_EQ(v.first_divergence, 2);
  EXPECT_EQ(v.divergence_position, 12);
  EXPECT_EQ(v.token_a, 0);
  EXPECT_EQ(v.token_b, 1);
  EXPECT_EQ(v.token_text_a, "t0");
  EXPECT_EQ(v.token_text_b, "t1");
  EXPECT_EQ(v.max_logit_diff, 1.0f);  // row 2: |0.5 - 1.5|; row 3's 9 is past the divergence

  // Divergence at the very first token: only that row counts.
  const GenerationRecord c = record({2, 2, 0, 1}, {{0, 1, 0.75f}, {0, 0, 1}, {1, 0.5f, 0}, {0, 9, 0}});
  v = compare_runs(a, c);
  EXPECT_EQ(v.first_divergence, 0);
  EXPECT_EQ(v.max_logit_diff, 0.75f);
}

TEST(CompareRuns, ARunEndingEarlierDivergesWhereItEnded) {
  const GenerationRecord a = record({1, 2, 0}, {{0, 1, 0}, {0, 0, 1}, {1, 0, 0}});
  GenerationRecord b = record({1, 2}, {{0, 1, 0}, {0, 0, 1}});
  b.finish = "stop";
  PromptVerdict v = compare_runs(a, b);
  EXPECT_FALSE(v.identical);
  EXPECT_EQ(v.first_divergence, 2);
  EXPECT_EQ(v.divergence_position, 12);
  EXPECT_EQ(v.token_a, 0);
  EXPECT_EQ(v.token_b, -1);
  EXPECT_EQ(v.token_text_b, "");
  EXPECT_EQ(v.finish_b, "stop");
  EXPECT_EQ(v.max_logit_diff, 0.0f);  // equal wherever both have logits

  // The other way round, and with the ended side's last row there (an
  // unnamed end-of-generation token): that row is compared too.
  b.logits.push_back({0.5f, 0, 0});
  v = compare_runs(b, a);
  EXPECT_EQ(v.first_divergence, 2);
  EXPECT_EQ(v.token_a, -1);
  EXPECT_EQ(v.token_b, 0);
  EXPECT_EQ(v.max_logit_diff, 0.5f);
}

// Both replies ended at their first token: identical, over the one row of
// logits the end-of-sequence draw had, and said to have ended at once.
TEST(CompareRuns, RepliesThatEndedAtOnceAreIdenticalOverOneRow) {
  GenerationRecord a = record({}, {{0, 1, 0}});
  a.finish = "stop";
  GenerationRecord b = a;
  b.logits[0][2] = 0.25f;
  const PromptVerdict v = compare_runs(a, b);
  EXPECT_TRUE(v.identical);
  EXPECT_TRUE(v.ended_at_once());
  EXPECT_FALSE(v.logits_identical);
  EXPECT_EQ(v.max_logit_diff, 0.25f);
  EXPECT_FALSE(compare_runs(record({1}, {{0, 1, 0}}), record({1}, {{0, 1, 0}})).ended_at_once());
  // Greedy: the end token is named, alone, and the reply stopped there (a
  // check said "identical (1 tokens ...)" of a reply with no text).
  GenerationRecord eos = record({1}, {{0, 1, 0}});
  eos.finish = "stop";
  EXPECT_TRUE(compare_runs(eos, eos).ended_at_once());
  eos.finish = "length";  // one token asked for: a reply, not an end
  EXPECT_FALSE(compare_runs(eos, eos).ended_at_once());
}

TEST(CompareRuns, NanOnOneSideIsInfinitelyFar) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const GenerationRecord a = record({1}, {{0, 1, nan}});
  const GenerationRecord b = record({1}, {{0, 1, 0}});
  EXPECT_EQ(compare_runs(a, b).max_logit_diff, std::numeric_limits<float>::infinity());
  EXPECT_EQ(compare_runs(a, a).max_logit_diff, 0.0f);
}

// ---- check_invariance on a tiny model ---------------------------------------------

class InvarianceCheck : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("invariance");
    other_path_ = test::tiny_model_temp_path("invariance_other");
    test::TinyModelSpec spec;
    spec.matrix_type = TensorType::Q8_0;
    spec.seed = 5;
    ASSERT_TRUE(test::write_tiny_gguf(spec, path_).ok());
    spec.seed = 6;  // same shapes and vocabulary, other weights
    ASSERT_TRUE(test::write_tiny_gguf(spec, other_path_).ok());
  }
  static void TearDownTestSuite() {
    std::filesystem::remove(path_);
    std::filesystem::remove(other_path_);
  }

  static EngineConfig base() {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 1;
    c.num_blocks = 2048;
    return c;
  }

  // Byte-level vocabulary: about one token per character, so the long
  // prompts fill several 16- and 32-token blocks that companions share.
  static std::vector<std::string> prompts() {
    return {"hi",
            "The quick brown fox jumps over the lazy dog, twice.",
            "Once upon a time, in a small village at the edge of a great forest, there lived an old clockmaker "
            "who had never once left the valley.",
            "12345 + 67890 ="};
  }

  static InvarianceReport check(const std::string& spec_a, const std::string& spec_b,
                                InvarianceOptions options = {}) {
    auto a = parse_invariance_side(spec_a, base());
    auto b = parse_invariance_side(spec_b, base());
    EXPECT_TRUE(a.ok()) << (a.ok() ? "" : a.error());
    EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error());
    if (!a.ok() || !b.ok()) return {};
    auto report = check_invariance(*a, *b, prompts(), options);
    EXPECT_TRUE(report.ok()) << (report.ok() ? "" : report.error());
    return report.ok() ? std::move(report).value() : InvarianceReport{};
  }

  static std::string describe(const PromptVerdict& v) {
    return "'" + v.prompt + "': first divergence " + std::to_string(v.first_divergence) + ", tokens " +
           std::to_string(v.token_a) + " vs " + std::to_string(v.token_b) + ", max logit diff " +
           std::to_string(v.max_logit_diff);
  }

  static inline std::string path_, other_path_;
};

// Every serving-mode pair the issue names: identical tokens and bitwise
// logits, and each side really ran in its mode (else the pair proves nothing).
TEST_F(InvarianceCheck, ServingModesGiveIdenticalGreedyOutput) {
  using Stats = InvarianceRunStats;
  struct Pair {
    const char* a;
    const char* b;
    std::function<bool(const Stats& a, const Stats& b)> exercised;
  };
  const auto any = [](const Stats&, const Stats&) { return true; };
  const Pair pairs[] = {
      {"concurrency=1", "concurrency=8",
       [](const Stats& a, const Stats& b) { return a.max_batch_seqs == 1 && b.max_batch_seqs == 8; }},
      {"block_size=16", "block_size=1", any},
      {"block_size=16", "block_size=32", any},
      {"paged=on", "paged=off", any},
      {"kv_mode=paged,concurrency=8", "kv_mode=contiguous,concurrency=8", any},
      {"prefix_caching=on,concurrency=8", "prefix_caching=off,concurrency=8",
       [](const Stats& a, const Stats& b) { return a.num_prefix_hit_tokens > 0 && b.num_prefix_hit_tokens == 0; }},
      {"cascade=off,concurrency=8", "cascade=on,concurrency=8",
       [](const Stats& a, const Stats& b) { return a.num_cascade_steps == 0 && b.num_cascade_steps > 0; }},
      {"cascade=off,concurrency=8", "cascade=auto,concurrency=8", any},
      {"cascade=off,concurrency=8,block_size=1", "cascade=on,concurrency=8,block_size=1",
       [](const Stats&, const Stats& b) { return b.num_cascade_steps > 0; }},
      {"max_batched_tokens=512", "max_batched_tokens=7,concurrency=8",
       [](const Stats&, const Stats& b) { return b.num_mixed_steps > 0; }},
      {"threads=1", "threads=2,concurrency=8", any},
      // Invariance holds within each KV cache type.
      {"kv_type=f16", "kv_type=f16,block_size=1,concurrency=8,cascade=on",
       [](const Stats&, const Stats& b) { return b.num_cascade_steps > 0; }},
      {"kv_cache_type=bf16,max_batched_tokens=7", "kv_cache_type=bf16,concurrency=8", any},
      {"kv_type=f16,paged=off", "kv_type=f16,concurrency=8,threads=1", any},
      // Speculative decoding: drafts verified in the step's rows change nothing,
      // also with cascade attention over the verification rows.
      {"spec=off", "spec=ngram",
       [](const Stats& a, const Stats& b) {
         return a.num_draft_tokens == 0 && b.num_accepted_draft_tokens > 0 &&
                b.num_draft_tokens > b.num_accepted_draft_tokens;
       }},
      {"spec=off,cascade=on,concurrency=8", "spec=ngram,cascade=on,concurrency=8",
       [](const Stats&, const Stats& b) { return b.num_cascade_steps > 0 && b.num_accepted_draft_tokens > 0; }},
      {"spec=off", "spec=ngram,spec_k=16,spec_ngram_min=2,block_size=1,max_batched_tokens=7,concurrency=8",
       [](const Stats&, const Stats& b) { return b.num_mixed_steps > 0 && b.num_accepted_draft_tokens > 0; }},
      // (q8_0 needs heads of a multiple of 32 dims: the default model's pairs have it.)
  };
  for (const Pair& pair : pairs) {
    SCOPED_TRACE(std::string(pair.a) + " vs " + pair.b);
    const InvarianceReport report = check(pair.a, pair.b);
    ASSERT_EQ(report.prompts.size(), prompts().size());
    for (const PromptVerdict& v : report.prompts) {
      EXPECT_TRUE(v.identical) << describe(v);
      EXPECT_TRUE(v.logits_identical) << describe(v);
      EXPECT_EQ(v.max_logit_diff, 0.0f) << describe(v);
      EXPECT_FALSE(v.tokens_a.empty()) << describe(v);
      EXPECT_GT(v.num_prompt_tokens, 0);
    }
    EXPECT_TRUE(report.all_identical());
    EXPECT_EQ(report.num_identical(), static_cast<int32_t>(prompts().size()));
    const Stats& a = report.stats_a;
    const Stats& b = report.stats_b;
    EXPECT_TRUE(pair.exercised(a, b)) << "a: " << a.num_steps << " steps, max batch " << a.max_batch_seqs
                                      << ", mixed " << a.num_mixed_steps << ", cascade " << a.num_cascade_steps
                                      << ", prefix hits " << a.num_prefix_hit_tokens << "; b: " << b.num_steps
                                      << " steps, max batch " << b.max_batch_seqs << ", mixed " << b.num_mixed_steps
                                      << ", cascade " << b.num_cascade_steps << ", prefix hits "
                                      << b.num_prefix_hit_tokens;
  }
}

// A sampled checked request with a fixed seed is as reproducible as greedy.
TEST_F(InvarianceCheck, SampledWithAFixedSeedIsIdenticalToo) {
  InvarianceOptions options;
  options.sampling.temperature = 0.9f;
  options.sampling.seed = 42;
  const InvarianceReport report = check("", "concurrency=8,block_size=1,max_batched_tokens=7", options);
  EXPECT_TRUE(report.all_identical());
  // Speculative verification draws each token with the plain sampler's own
  // random number: the same sampled reply.
  const InvarianceReport spec = check("", "spec=ngram,concurrency=8", options);
  EXPECT_TRUE(spec.all_identical());
  EXPECT_GT(spec.stats_b.num_draft_tokens, 0);
  options.sampling.seed = 0;
  auto a = parse_invariance_side("", base());
  ASSERT_TRUE(a.ok());
  auto refused = check_invariance(*a, *a, prompts(), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("fixed seed"), std::string::npos) << refused.error();
}

// The checker can fail: another model's weights diverge, and the report says where.
// A chat prompt runs through the model's chat template, as a chat submits
// it: the same prompt tokens, so the verdict is about the conversation's own
// input, and it is compared like any other prompt.
TEST_F(InvarianceCheck, AChatRunsTheTokensTheChatWouldSubmit) {
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "hi"}, {"assistant", "hello"},
                                             {"user", "and then?"}};
  auto engine = Engine::create(base());
  ASSERT_TRUE(engine.ok()) << engine.error();
  // What a chat front end gets for these messages, greedy: the tokens the
  // check must generate for the chat prompt.
  GenerationRequest as_chat;
  as_chat.messages = messages;
  as_chat.sampling.temperature = 0.0f;
  as_chat.sampling.max_tokens = 6;
  std::vector<int32_t> chat_tokens;
  bool chat_ended = false;
  as_chat.on_event = [&](const TokenEvent& ev) {
    if (ev.token >= 0) chat_tokens.push_back(ev.token);
    chat_ended = chat_ended || ev.finish == FinishReason::Stop;
  };
  SubmittedPrompt submitted;
  ASSERT_TRUE((*engine)->submit(std::move(as_chat), &submitted).ok());
  (*engine)->run_until_idle();

  auto a = parse_invariance_side("", base());
  auto b = parse_invariance_side("block_size=4,concurrency=3", base());
  ASSERT_TRUE(a.ok() && b.ok());
  InvarianceOptions options;
  options.max_tokens = 6;
  auto report = check_invariance(*a, *b, {InvariancePrompt::chat(messages), InvariancePrompt("and then?")}, options);
  ASSERT_TRUE(report.ok()) << report.error();
  const PromptVerdict& chat = report->prompts[0];
  EXPECT_TRUE(chat.chat);
  EXPECT_EQ(chat.prompt, "and then?");
  EXPECT_EQ(chat.num_prompt_tokens, static_cast<int32_t>(submitted.tokens.size()));
  // Its tokens are the chat's (the check names an ending token the chat
  // does not report as an event).
  std::vector<int32_t> checked = chat.tokens_a;
  if (chat_ended && checked.size() == chat_tokens.size() + 1) checked.pop_back();
  EXPECT_EQ(checked, chat_tokens);
  EXPECT_TRUE(chat.identical) << describe(chat);
  EXPECT_TRUE(chat.logits_identical);
  // The same words as raw text are a much shorter input.
  const PromptVerdict& raw = report->prompts[1];
  EXPECT_FALSE(raw.chat);
  EXPECT_LT(raw.num_prompt_tokens, chat.num_prompt_tokens);
}

TEST_F(InvarianceCheck, DifferentWeightsDiverge) {
  const InvarianceReport report = check("", "model_path=" + other_path_);
  ASSERT_EQ(report.prompts.size(), prompts().size());
  EXPECT_FALSE(report.all_identical());
  EXPECT_EQ(report.num_identical(), 0);
  for (const PromptVerdict& v : report.prompts) {
    EXPECT_FALSE(v.identical);
    ASSERT_GE(v.first_divergence, 0);
    EXPECT_EQ(v.divergence_position, v.num_prompt_tokens + v.first_divergence);
    EXPECT_NE(v.token_a, v.token_b);
    EXPECT_GT(v.max_logit_diff, 0.0f);
    EXPECT_EQ(v.tokens_a[static_cast<size_t>(v.first_divergence)], v.token_a);
  }
}

TEST_F(InvarianceCheck, ProgressCountsRunsAndCanCancel) {
  auto side = parse_invariance_side("", base());
  ASSERT_TRUE(side.ok());
  int32_t last_done = -1, seen_total = 0;
  auto report = check_invariance(*side, *side, prompts(), {}, [&](int32_t done, int32_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    seen_total = total;
    return true;
  });
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(seen_total, 8);
  EXPECT_EQ(last_done, 8);

  auto cancelled = check_invariance(*side, *side, prompts(), {},
                                    [](int32_t done, int32_t) { return done < 3; });
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.error(), "cancelled");

  // Cancelled while the first model loads (the second call is a load report).
  int32_t calls = 0;
  auto during_load = check_invariance(*side, *side, prompts(), {}, [&](int32_t, int32_t) { return ++calls < 2; });
  ASSERT_FALSE(during_load.ok());
  EXPECT_EQ(during_load.error(), "cancelled");
  EXPECT_EQ(calls, 2);
}

// Settings that cut the prompt differently run different inputs: the
// verdict says so and each side's warnings say what was cut (before, the
// check called such runs identical with nothing to show why the logits
// differed).
TEST_F(InvarianceCheck, PromptsCutDifferentlyAreFlaggedWithTheWarnings) {
  auto a = parse_invariance_side("max_model_len=32,context_overflow=truncate_middle,context_keep=4", base());
  auto b = parse_invariance_side("max_model_len=32,context_overflow=shift,context_keep=4", base());
  ASSERT_TRUE(a.ok() && b.ok());
  InvarianceOptions options;
  options.max_tokens = 4;
  auto report = check_invariance(*a, *b, {prompts()[2]}, options);
  ASSERT_TRUE(report.ok()) << report.error();
  const PromptVerdict& v = report->prompts[0];
  EXPECT_FALSE(v.same_prompt);
  EXPECT_NE(v.num_prompt_tokens, v.num_prompt_tokens_b);
  ASSERT_FALSE(report->stats_a.warnings.empty());
  EXPECT_NE(report->stats_a.warnings.back().find("from its middle were dropped"), std::string::npos);
  ASSERT_FALSE(report->stats_b.warnings.empty());

  auto same = check_invariance(*a, *a, {prompts()[2]}, options);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->prompts[0].same_prompt);
}

// The logits of every generated token are kept for the comparison: a check
// that could not hold them is refused before it runs (the app's panel could
// be asked for enough to exhaust memory).
TEST_F(InvarianceCheck, AskingForMoreLogitsThanFitIsRefusedUpFront) {
  auto a = parse_invariance_side("", base());
  ASSERT_TRUE(a.ok());
  InvarianceOptions options;
  options.max_tokens = 4200;
  const std::vector<std::string> many(1000, "hello");
  bool ran = false;
  auto report = check_invariance(*a, *a, many, options, [&](int32_t done, int32_t) {
    ran = ran || done > 0;
    return true;
  });
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().find("the logits kept for the comparison would take"), std::string::npos)
      << report.error();
  EXPECT_NE(report.error().find("1000 prompts x 4200 tokens"), std::string::npos) << report.error();
  EXPECT_FALSE(ran);
}

TEST_F(InvarianceCheck, ErrorsNameTheSide) {
  auto a = parse_invariance_side("", base());
  auto b = parse_invariance_side("model_path=/nonexistent/model.gguf", base());
  ASSERT_TRUE(a.ok() && b.ok());
  auto report = check_invariance(*a, *b, prompts(), {});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().rfind("b: ", 0), 0u) << report.error();

  // A prompt that does not fit b's pool: the error carries b's load warning,
  // which names the cause (the refusal itself speaks of the context's size).
  auto small = parse_invariance_side("num_blocks=2,block_size=8", base());
  ASSERT_TRUE(small.ok());
  auto refused = check_invariance(*a, *small, std::vector<std::string>{std::string(40, 'x')}, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().rfind("b: ", 0), 0u) << refused.error();
  EXPECT_NE(refused.error().find("\nb: warning: the KV pool holds only 16 tokens"), std::string::npos)
      << refused.error();
}

}  // namespace
}  // namespace kvscope
