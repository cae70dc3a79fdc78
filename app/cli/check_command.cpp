// `kvscope-cli check`: the invariance checker (kvscope/invariance_check.h)
// from the terminal. Runs the same prompts under two engine configurations
// and reports, per prompt, identical or where the greedy output first
// diverges. docs/invariance.md describes the keys and the exit codes.
//
//   kvscope-cli check --prompts prompts.txt --a "block_size=16" --b "block_size=1,concurrency=8"
//   kvscope-cli check -p "The capital of France is" --a "cascade=off,concurrency=16" --b "cascade=on,concurrency=16" --json
//   kvscope-cli check --chat -p "Write a haiku about memory" --a "" --b "kv_type=f16"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <tuple>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "common_options.h"
#include "engine_options.h"
#include "file_args.h"
#include "kvscope/invariance_check.h"
#include "kvscope/sampling_params.h"
#include "kvscope/setting_table.h"

namespace kvscope::cli {
namespace {

// engine_config_from's stand-in for "no --model given", replaced by the default model's path.
constexpr const char* kDefaultModelPlaceholder = "(default model)";

struct CheckOptions {
  EngineOptions engine;  // the base both sides start from
  std::string spec_a, spec_b;
  std::string prompts_file;
  std::vector<std::string> prompts;  // -p, repeatable
  bool chat = false;                 // each prompt a user message through the chat template
  std::string system;
  CLI::Option* system_option = nullptr;  // given at all: --system "" is an empty system message, not none
  int32_t max_tokens = 32;
  float temperature = 0.0f;
  uint64_t seed = 0;
  bool json = false;
};

// Text for one terminal line, in single quotes: escape_line with the quote escaped.
std::string escaped(std::string_view text, size_t max_chars = std::string::npos) {
  return escape_line(text, max_chars, '\'');
}

std::string token_label(int32_t token, const std::string& text) {
  if (token < 0) return "<finished>";
  return fmt::format("<{} '{}'>", token, escaped(text));
}

// "0", "3.8e-07", "inf".
std::string logit_diff_text(float diff) {
  if (diff == 0.0f) return "0";
  if (std::isinf(diff)) return "inf";
  return fmt::format("{:.3g}", diff);
}

void print_text_report(const InvarianceReport& report, const std::string& model) {
  std::string out = fmt::format("model: {}\na: {}\nb: {}\n\n", model, report.a.spec.empty() ? "(base)" : report.a.spec,
                                report.b.spec.empty() ? "(base)" : report.b.spec);
  const size_t total = report.prompts.size();
  for (size_t i = 0; i < total; ++i) {
    const PromptVerdict& v = report.prompts[i];
    out += fmt::format("[{}/{}] '{}'{}\n", i + 1, total, escaped(v.prompt, 70),
                       v.chat ? " (as a chat, through the model's template)" : "");
    if (!v.same_prompt) {
      out += fmt::format("  the sides ran different prompt tokens (a: {}, b: {}): {}; the outputs are of "
                         "different inputs\n",
                         v.num_prompt_tokens, v.num_prompt_tokens_b, report.different_prompt_reason());
    }
    if (v.ended_at_once()) {
      // Identical, but over one position: worth saying, not a full check.
      out += fmt::format("  identical, but both ended at once ({}): only the first position's logits were compared "
                         "(max logit diff {}{})\n",
                         v.finish_a, logit_diff_text(v.max_logit_diff),
                         v.logits_identical ? "" : "; not bitwise equal");
    } else if (v.identical) {
      out += fmt::format("  identical ({} tokens, max logit diff {}{})\n", v.tokens_a.size(),
                         logit_diff_text(v.max_logit_diff),
                         v.logits_identical ? "" : "; the logits are not bitwise equal");
      out += fmt::format("  text: '{}'\n", escaped(v.text_a));
    } else {
      out += fmt::format("  DIVERGES at generated token {} (position {}): a={} b={}, max logit diff {}\n",
                         v.first_divergence, v.divergence_position, token_label(v.token_a, v.token_text_a),
                         token_label(v.token_b, v.token_text_b), logit_diff_text(v.max_logit_diff));
      out += fmt::format("  a: '{}' ({})\n", escaped(v.text_a), v.finish_a);
      out += fmt::format("  b: '{}' ({})\n", escaped(v.text_b), v.finish_b);
      // One side ran out of room where the other went on: the settings hold
      // different contexts, which is not a numerical difference.
      for (const auto& [name, token, finish] : {std::tuple{"a", v.token_a, v.finish_a}, std::tuple{"b", v.token_b, v.finish_b}}) {
        if (token < 0 && finish == "context_full") {
          // Equal contexts part where the other side shifted past the end,
          // or where this side's shift could not be made.
          const EngineConfig& self = name == std::string_view("a") ? report.a.config : report.b.config;
          // As resolved: a small pool (num_blocks, kv_budget) shortens a context the config leaves at 0.
          const bool same_length = report.stats_a.max_model_len == report.stats_b.max_model_len;
          const bool shifts = self.context_overflow == ContextOverflow::Shift && self.paged;
          out += fmt::format("  ({} stopped where its context was full: {}; the tokens before agree)\n", name,
                             !same_length ? "the two settings hold different contexts"
                             : shifts     ? "its shift could not be made there: nothing to drop after "
                                            "context_keep, or no free block for copies of shared blocks "
                                            "even with every other sequence preempted (more num_blocks)"
                                          : "the other side's context_overflow went on past it");
        }
      }
    }
  }
  // What each side's runs did: the setting under test must have engaged for
  // "identical" to mean anything about it.
  const auto runs = [](const char* name, const InvarianceRunStats& s) {
    std::string line = fmt::format("  {}: {} step{}, up to {} sequence{} per step, {} mixed prefill/decode, {} with "
                                   "a cascade pass, {} prompt token{} from the prefix cache",
                                   name, s.num_steps, s.num_steps == 1 ? "" : "s", s.max_batch_seqs,
                                   s.max_batch_seqs == 1 ? "" : "s", s.num_mixed_steps, s.num_cascade_steps,
                                   s.num_prefix_hit_tokens, s.num_prefix_hit_tokens == 1 ? "" : "s");
    if (s.num_graph_steps > 0) line += fmt::format(", {} replayed as CUDA graphs", s.num_graph_steps);
    if (s.num_draft_tokens > 0) {
      line += fmt::format(", {} of {} draft tokens accepted in {} of {} decoding steps", s.num_accepted_draft_tokens,
                          s.num_draft_tokens, s.num_spec_steps, s.num_decode_steps);
    }
    if (s.num_context_shifts > 0) {
      line += fmt::format(", {} context shift{}", s.num_context_shifts, s.num_context_shifts == 1 ? "" : "s");
    }
    if (s.num_preemptions > 0) {
      line += fmt::format(", {} preemption{} ({} block{} swapped out)", s.num_preemptions,
                          s.num_preemptions == 1 ? "" : "s", s.num_swapped_out_blocks,
                          s.num_swapped_out_blocks == 1 ? "" : "s");
    }
    return line + "\n";
  };
  out += "\nruns\n" + runs("a", report.stats_a) + runs("b", report.stats_b);
  // What generate would have printed on stderr for each side: a setting
  // adjusted, a prompt cut to fit.
  for (const auto& [name, stats] : {std::pair{"a", &report.stats_a}, std::pair{"b", &report.stats_b}}) {
    for (const std::string& w : stats->warnings) out += fmt::format("{}: warning: {}\n", name, w);
  }
  for (const std::string& note : report.unexercised()) out += fmt::format("note: {}\n", note);
  for (const std::string& note : report.expected_differences()) out += fmt::format("note: {}\n", note);
  out += fmt::format("\n{} of {} prompts identical{}\n", report.num_identical(), total,
                     report.all_identical() ? "" : "; the outputs DIVERGE");
  write_stdout(out);
}

nlohmann::ordered_json side_json(const InvarianceSide& side, const std::string& model) {
  nlohmann::ordered_json settings = engine_settings_json(side.config);
  settings["model_path"] = side.config.model_path == kDefaultModelPlaceholder ? model : side.config.model_path;
  return {{"spec", side.spec}, {"concurrency", side.concurrency}, {"settings", settings}};
}

nlohmann::ordered_json stats_json(const InvarianceRunStats& s) {
  return {{"num_steps", s.num_steps},
          {"max_batch_seqs", s.max_batch_seqs},
          {"num_mixed_steps", s.num_mixed_steps},
          {"num_cascade_steps", s.num_cascade_steps},
          {"num_graph_steps", s.num_graph_steps},
          {"num_prefix_hit_tokens", s.num_prefix_hit_tokens},
          {"num_decode_steps", s.num_decode_steps},
          {"num_spec_steps", s.num_spec_steps},
          {"num_draft_tokens", s.num_draft_tokens},
          {"num_accepted_draft_tokens", s.num_accepted_draft_tokens},
          {"max_checked_batch_seqs", s.max_checked_batch_seqs},
          {"num_preemptions", s.num_preemptions},
          {"num_swapped_out_blocks", s.num_swapped_out_blocks},
          {"num_context_shifts", s.num_context_shifts},
          {"warnings", s.warnings}};
}

void print_json_report(const InvarianceReport& report, const CheckOptions& o, const std::string& model) {
  nlohmann::ordered_json prompts = nlohmann::ordered_json::array();
  for (const PromptVerdict& v : report.prompts) {
    nlohmann::ordered_json p = {
        {"prompt", v.prompt},
        {"chat", v.chat},
        {"identical", v.identical},
        {"logits_identical", v.logits_identical},
        {"first_divergence", v.first_divergence},
        {"divergence_position", v.divergence_position},
        {"token_a", v.token_a},
        {"token_b", v.token_b},
        {"token_text_a", v.token_text_a},
        {"token_text_b", v.token_text_b},
        // JSON has no infinity: a NaN on one side only is written as null.
        {"max_logit_diff", std::isinf(v.max_logit_diff) ? nlohmann::ordered_json(nullptr)
                                                        : nlohmann::ordered_json(v.max_logit_diff)},
        {"num_prompt_tokens", v.num_prompt_tokens},
        {"num_prompt_tokens_b", v.num_prompt_tokens_b},
        {"same_prompt", v.same_prompt},
        {"tokens_a", v.tokens_a},
        {"tokens_b", v.tokens_b},
        {"text_a", v.text_a},
        {"text_b", v.text_b},
        {"finish_a", v.finish_a},
        {"finish_b", v.finish_b},
    };
    prompts.push_back(std::move(p));
  }
  const nlohmann::ordered_json j = {
      {"model", model},
      {"a", side_json(report.a, model)},
      {"b", side_json(report.b, model)},
      {"max_tokens", o.max_tokens},
      {"temperature", o.temperature},
      {"seed", o.seed},
      {"stats_a", stats_json(report.stats_a)},
      {"stats_b", stats_json(report.stats_b)},
      {"unexercised", report.unexercised()},
      {"expected_differences", report.expected_differences()},
      {"all_identical", report.all_identical()},
      {"num_identical", report.num_identical()},
      {"num_prompts", report.prompts.size()},
      {"prompts", prompts},
  };
  write_stdout(dump_json(j) + "\n");
}

int run_check(const CheckOptions& o) {
  std::vector<std::string> prompts = o.prompts;
  if (!o.prompts_file.empty()) {
    Result<std::string> file = read_file_arg(o.prompts_file);
    if (!file.ok()) {
      print_error(fmt::format("--prompts: {}", file.error()));
      return kExitUsage;
    }
    std::vector<std::string> blocks = split_prompt_blocks(*file);
    if (blocks.empty()) {
      print_error(fmt::format("--prompts: '{}' holds no prompt (prompts are blocks of text separated by blank lines)",
                              o.prompts_file));
      return kExitUsage;
    }
    for (std::string& p : blocks) prompts.push_back(std::move(p));
  }
  if (prompts.empty()) {
    print_error("no prompts: give --prompts FILE (prompts separated by blank lines) or -p TEXT");
    return kExitUsage;
  }
  if (o.system_option->count() > 0 && !o.chat) {
    print_error("--system needs --chat (a system message goes through the chat template)");
    return kExitUsage;
  }
  // An empty -p is a usage error, as generate's is, not a failed run.
  for (const std::string& p : prompts) {
    if (p.find_first_not_of(" \t\r\n") == std::string::npos) {
      print_error("a prompt is empty: give it some text");
      return kExitUsage;
    }
  }

  Result<EngineConfig> base = engine_config_from(o.engine);
  if (!base.ok()) {
    print_error(base.error());
    return kExitUsage;
  }
  Result<InvarianceSide> a = parse_invariance_side(o.spec_a, *base);
  if (!a.ok()) {
    print_error(fmt::format("--a: {}", a.error()));
    return kExitUsage;
  }
  Result<InvarianceSide> b = parse_invariance_side(o.spec_b, *base);
  if (!b.ok()) {
    print_error(fmt::format("--b: {}", b.error()));
    return kExitUsage;
  }

  // An option neither side can use is said, as generate says it (a side
  // whose own settings make it apply, spec = ngram for --spec-k, uses it).
  const std::vector<std::string> ignored_by_b = ignored_options(o.engine, b->config);
  for (const std::string& w : ignored_options(o.engine, a->config)) {
    if (std::find(ignored_by_b.begin(), ignored_by_b.end(), w) != ignored_by_b.end()) {
      print_warning(w);
    }
  }

  InvarianceOptions options;
  options.max_tokens = o.max_tokens;
  options.sampling.temperature = o.temperature;
  options.sampling.seed = o.seed;
  if (o.temperature != 0.0f && o.seed == 0) {
    print_error("--temp above 0 needs --seed N (N >= 1): with a random seed the two sides would differ anyway");
    return kExitUsage;
  }
  if (!check_sampling(options.sampling)) return kExitUsage;

  // The model last: a mistyped key is a usage error whether or not a model is installed.
  std::string shown_model;
  for (InvarianceSide* side : {&*a, &*b}) {
    const std::string requested =
        side->config.model_path == kDefaultModelPlaceholder ? std::string() : side->config.model_path;
    const std::optional<std::string> path = resolve_model_path(requested);
    if (!path) return kExitRuntime;
    side->config.model_path = *path;
    if (shown_model.empty()) shown_model = *path;
    else if (shown_model != *path) shown_model += " | " + *path;
  }

  const bool show_progress = isatty(STDERR_FILENO) != 0;
  auto progress = [show_progress](int32_t done, int32_t total) {
    if (show_progress) fmt::print(stderr, "\rchecking: {}/{} runs", done, total);
    return true;
  };
  // With --chat each prompt is what `generate --chat` would submit.
  std::vector<InvariancePrompt> checked;
  for (const std::string& p : prompts) {
    if (!o.chat) {
      checked.emplace_back(p);
      continue;
    }
    std::vector<ChatMessage> messages;
    if (o.system_option->count() > 0) messages.emplace_back("system", o.system);
    messages.emplace_back("user", p);
    checked.push_back(InvariancePrompt::chat(std::move(messages)));
  }
  Result<InvarianceReport> report = check_invariance(*a, *b, checked, options, progress);
  if (show_progress) fmt::print(stderr, "\r\033[K");
  if (!report.ok()) {
    print_error(report.error());
    return kExitRuntime;
  }
  if (o.json) {
    print_json_report(*report, o, shown_model);
  } else {
    print_text_report(*report, shown_model);
  }
  return report->all_identical() ? kExitOk : kExitDiverged;
}

}  // namespace

Command add_check_command(CLI::App& parent) {
  auto o = std::make_shared<CheckOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "check", "Invariance check: run the same prompts under two engine configurations and compare the greedy "
               "output token by token (exit 0: all identical, 3: a prompt diverges)");
  std::vector<std::string> setting_keys, aliases;
  for (const SettingSpec& s : engine_settings()) setting_keys.push_back(s.key);
  for (const InvarianceAlias& alias : invariance_aliases()) {
    std::vector<std::string> values;
    for (const auto& [name, row_text] : alias.values) values.push_back(name);
    aliases.push_back(fmt::format("{}={} ({})", alias.key, values.empty() ? "..." : fmt::format("{}", fmt::join(values, "|")),
                                  alias.setting));
  }
  cmd->footer(fmt::format(
      "--a and --b take \"key=value,key=value\" applied over the engine options: any setting key ({}), "
      "concurrency=N (the checked request plus N-1 companions sharing its prompt, 1..{}), and the aliases "
      "{}.\n"
      "--prompts FILE: prompts separated by blank lines (a prompt may span lines).\n"
      "Exit codes: 0 all identical, 1 runtime error, 2 usage error, 3 a prompt diverges.",
      fmt::join(setting_keys, ", "),
      kMaxInvarianceConcurrency, fmt::join(aliases, ", ")));
  cmd->add_option("--a", o->spec_a, "side a: key=value,... over the engine options (\"\" for them as given)")
      ->required();
  cmd->add_option("--b", o->spec_b, "side b: key=value,... over the engine options")->required();
  cmd->add_option("--prompts", o->prompts_file, "file of prompts separated by blank lines");
  cmd->add_option("-p,--prompt", o->prompts, "a prompt (repeatable; added after --prompts)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--chat", o->chat,
                "run each prompt as a user message through the model's chat template, as generate --chat, the "
                "app's chat and the server's chat endpoint submit it");
  o->system_option = cmd->add_option("--system", o->system,
                                     "system message before each prompt (with --chat; \"\" sends an empty one)");
  cmd->add_option("-n,--max-tokens", o->max_tokens, "tokens generated per prompt")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  // Checked as generate checks it, by SamplingParams::validate (CLI11's
  // NonNegativeNumber printed its range up to DBL_MAX, all 309 digits).
  cmd->add_option("--temp,--temperature", o->temperature, "the checked request's temperature (0: greedy)")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            SamplingParams p;
            p.temperature = std::strtof(text.c_str(), nullptr);
            const Status valid = p.validate();
            return valid.ok() ? std::string() : valid.error();
          },
          "", "temperature"))
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--seed", [o](const std::string& text) { o->seed = parse_seed(text); },
         "sampling seed, needed with --temp above 0")
      ->type_name("INT");
  cmd->add_flag("--json", o->json, "print one JSON object instead of text");
  add_engine_options(*cmd, o->engine);
  return {cmd, [o] { return run_check(*o); }};
}

}  // namespace kvscope::cli
