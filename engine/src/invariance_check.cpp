// The invariance checker (kvscope/invariance_check.h): parse the two sides,
// run every prompt on each, compare token by token and logit by logit. What
// a report says about itself (notes, counts) is in invariance_report.cpp.
//   tested by tests/engine/runtime/invariance_check_test.cpp
#include "kvscope/invariance_check.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "kvscope/engine.h"
#include "kvscope/request.h"
#include "kvscope/setting_table.h"

namespace kvscope {
namespace {

constexpr std::string_view kConcurrencyKey = "concurrency";
// The most memory the compared logits may take, both sides together.
constexpr int64_t kMaxKeptLogitsBytes = int64_t{4} << 30;
// Companions are sampled, so they leave the checked request's path at once
// and keep the batch varied; fixed seeds keep a side reproducible.
constexpr float kCompanionTemperature = 0.8f;
constexpr uint64_t kCompanionSeedBase = 1000;

std::string trim(std::string_view text) {
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  return std::string(text.substr(b, e - b));
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

const InvarianceAlias* find_alias(std::string_view key) {
  for (const InvarianceAlias& a : invariance_aliases()) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

// The alias's value as the text its table row parses.
Result<std::string> alias_value(const InvarianceAlias& alias, const std::string& value) {
  if (alias.values.empty()) return value;
  std::vector<std::string> names;
  for (const auto& [name, row_text] : alias.values) {
    if (name == value) return row_text;
    names.push_back(name);
  }
  return Error{fmt::format("{}: '{}' is not one of {}", alias.key, value, fmt::join(names, ", "))};
}

Result<int32_t> parse_concurrency(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    return Error{fmt::format("{}: '{}' is not a whole number", kConcurrencyKey, text)};
  }
  if (v < 1 || v > kMaxInvarianceConcurrency) {
    return Error{fmt::format("{} = {} is out of range [1, {}]", kConcurrencyKey, v, kMaxInvarianceConcurrency)};
  }
  return static_cast<int32_t>(v);
}

// |a - b| where a NaN on one side only is infinitely far and NaN on both is equal.
float logit_distance(float a, float b) {
  const bool nan_a = std::isnan(a), nan_b = std::isnan(b);
  if (nan_a || nan_b) return nan_a == nan_b ? 0.0f : std::numeric_limits<float>::infinity();
  if (a == b) return 0.0f;  // also +inf == +inf
  return std::fabs(a - b);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Whether the sampler picks argmax(raw logits): greedy with no penalty that
// changes the logits first (sampler.cpp copy_and_penalise).
bool picks_raw_argmax(const SamplingParams& p) {
  return p.temperature == 0.0f && p.repetition_penalty == 1.0f && p.presence_penalty == 0.0f &&
         p.frequency_penalty == 0.0f;
}

// One engine step, counted into `stats`.
// `checked_running`: the checked request had not finished before this step,
// so it was one of the step's sequences.
void step_counted(Engine& engine, InvarianceRunStats& stats, bool checked_running) {
  engine.step();
  const StepStats step = engine.last_step_stats();
  if (step.num_seqs == 0) return;
  ++stats.num_steps;
  stats.max_batch_seqs = std::max(stats.max_batch_seqs, step.num_seqs);
  if (checked_running) stats.max_checked_batch_seqs = std::max(stats.max_checked_batch_seqs, step.num_seqs);
  if (step.num_prefill_tokens > 0 && step.num_decode_tokens > 0) ++stats.num_mixed_steps;
  if (step.num_cascade_groups > 0) ++stats.num_cascade_steps;
  if (step.graph_replayed) ++stats.num_graph_steps;
  if (step.num_decode_tokens > 0) ++stats.num_decode_steps;
  if (step.num_draft_tokens > 0) ++stats.num_spec_steps;
  stats.num_draft_tokens += step.num_draft_tokens;
  stats.num_accepted_draft_tokens += step.num_accepted_tokens;
}

struct PromptRun {
  GenerationRecord record;
  std::vector<int32_t> prompt_tokens;  // as submitted (after any cut to fit)
  std::vector<std::string> warnings;   // the request's own (SubmittedPrompt::warnings)
};

// Runs one prompt (plus its companions) to idle on `engine`.
// The prompt onto a request (the checked one or a companion).
void set_prompt(GenerationRequest& r, const InvariancePrompt& prompt) {
  if (prompt.is_chat()) {
    r.messages = prompt.messages;
  } else {
    r.prompt = prompt.text;
  }
}

Result<PromptRun> run_prompt(Engine& engine, const InvarianceSide& side, const InvariancePrompt& prompt,
                             const InvarianceOptions& options, const std::function<bool()>& keep_going,
                             InvarianceRunStats& stats) {
  PromptRun run;
  GenerationRecord& rec = run.record;
  bool checked_finished = false;
  std::string error;

  GenerationRequest checked;
  set_prompt(checked, prompt);
  checked.sampling = options.sampling;
  checked.sampling.max_tokens = options.max_tokens;
  checked.on_logits = [&rec](int32_t index, int32_t position, const float* logits, int32_t vocab) {
    if (index != 0) return;
    rec.positions.push_back(position);
    rec.logits.emplace_back(logits, logits + vocab);
  };
  checked.on_event = [&](const TokenEvent& ev) {
    if (ev.index != 0) return;
    if (ev.token >= 0) {
      rec.tokens.push_back(ev.token);
      rec.token_texts.push_back(engine.token_bytes(ev.token, true));
    }
    rec.text += ev.text;
    if (ev.finish != FinishReason::None) {
      checked_finished = true;
      stats.num_context_shifts += ev.stats.num_context_shifts;
      rec.finish = finish_reason_name(ev.finish);
      if (ev.finish == FinishReason::Error) error = ev.error;
    }
  };
  SubmittedPrompt submitted;
  Result<RequestId> id = engine.submit(std::move(checked), &submitted);
  if (!id.ok()) return Error{id.error()};
  run.prompt_tokens = std::move(submitted.tokens);
  run.warnings = std::move(submitted.warnings);

  // Prefill first, alone: the companions then find the prompt's blocks in
  // the prefix cache and their prefill shares steps with its decode.
  while (engine.has_work() && rec.logits.empty() && !checked_finished) {
    if (!keep_going()) return Error{"cancelled"};
    step_counted(engine, stats, true);
  }
  for (int32_t i = 1; i < side.concurrency && !checked_finished; ++i) {
    GenerationRequest companion;
    set_prompt(companion, prompt);
    companion.sampling.temperature = kCompanionTemperature;
    companion.sampling.seed = kCompanionSeedBase + static_cast<uint64_t>(i);
    companion.sampling.max_tokens = options.max_tokens;
    companion.sampling.ignore_eos = options.sampling.ignore_eos;
    Result<RequestId> cid = engine.submit(std::move(companion));
    if (!cid.ok()) return Error{fmt::format("companion request {}: {}", i, cid.error())};
  }
  while (engine.has_work()) {
    if (!keep_going()) return Error{"cancelled"};
    step_counted(engine, stats, !checked_finished);
  }
  if (!error.empty()) return Error{error};
  if (!checked_finished) return Error{"the engine stopped before the request finished"};

  // An end-of-generation token finishes the request without a token event,
  // leaving one logits row more than tokens. Under greedy sampling its id is
  // the argmax of that row (what the sampler picked); otherwise it stays
  // unnamed and only its logits are compared.
  if (rec.logits.size() == rec.tokens.size() + 1 && picks_raw_argmax(options.sampling)) {
    const std::vector<float>& row = rec.logits.back();
    const int32_t eog = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    rec.tokens.push_back(eog);
    rec.token_texts.push_back(engine.token_bytes(eog, true));
  }
  return run;
}

}  // namespace

const std::vector<InvarianceAlias>& invariance_aliases() {
  static const std::vector<InvarianceAlias> aliases = {
      {"kv_mode", "paged", {{"paged", "true"}, {"contiguous", "false"}}},
      {"prefix_cache", "prefix_caching", {}},
      {"chunk", "max_batched_tokens", {}},
      {"kv_type", "kv_cache_type", {}},
  };
  return aliases;
}

std::vector<std::string> invariance_keys() {
  std::vector<std::string> keys;
  for (const SettingSpec& s : engine_settings()) keys.push_back(s.key);
  keys.emplace_back(kConcurrencyKey);
  for (const InvarianceAlias& a : invariance_aliases()) keys.push_back(a.key);
  return keys;
}

std::vector<std::string> split_prompt_blocks(std::string_view text) {
  std::vector<std::string> prompts;
  std::string block;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      if (!block.empty()) prompts.push_back(std::move(block));
      block.clear();
    } else {
      if (!block.empty()) block += '\n';
      block += line;
    }
    start = end + 1;
  }
  if (!block.empty()) prompts.push_back(std::move(block));
  return prompts;
}

Result<InvarianceSide> parse_invariance_side(std::string_view spec, const EngineConfig& base) {
  InvarianceSide side;
  side.config = base;
  std::set<std::string> seen;  // table keys (aliases resolved) and "concurrency"
  if (trim(spec).empty()) return side;
  for (const std::string& raw : split(trim(spec), ',')) {
    const std::string item = trim(raw);
    if (item.empty()) continue;  // "block_size=8," or ",,": a comma too many says nothing
    // As reports show it: the items, without the extra commas and spaces.
    side.spec += (side.spec.empty() ? "" : ",") + item;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return Error{fmt::format("'{}' is not key=value", item)};
    const std::string key = trim(std::string_view(item).substr(0, eq));
    std::string value = trim(std::string_view(item).substr(eq + 1));

    std::string setting_key = key;
    if (const InvarianceAlias* alias = find_alias(key)) {
      setting_key = alias->setting;
      KVSCOPE_ASSIGN(value, alias_value(*alias, value));
    }
    if (!seen.insert(setting_key).second) {
      return Error{setting_key == key ? fmt::format("'{}' is given twice", key)
                                      : fmt::format("'{}' is given twice (as {})", setting_key, key)};
    }
    if (key == kConcurrencyKey) {
      KVSCOPE_ASSIGN(side.concurrency, parse_concurrency(value));
      continue;
    }
    const SettingSpec* row = find_setting(setting_key);
    if (!row && !find_alias(key)) {
      // The command-line spelling someone who learned the options types
      // (ctx, paging, block-size, --ctx) names the same setting.
      row = find_setting_by_cli_option(key);
      if (row && !seen.insert(row->key).second) return Error{fmt::format("'{}' is given twice (as {})", row->key, key)};
    }
    if (!row) {
      return Error{fmt::format("unknown setting '{}' (known: {})", key, fmt::join(invariance_keys(), ", "))};
    }
    Result<SettingValue> parsed = row->parse(value);
    if (!parsed.ok()) return Error{parsed.error()};
    row->set(side.config, *parsed);
  }
  Status valid = problems_status(side.config.validate());
  if (!valid.ok()) return Error{valid.error()};
  return side;
}

PromptVerdict compare_runs(const GenerationRecord& a, const GenerationRecord& b) {
  PromptVerdict v;
  v.tokens_a = a.tokens;
  v.tokens_b = b.tokens;
  v.text_a = a.text;
  v.text_b = b.text;
  v.finish_a = a.finish;
  v.finish_b = b.finish;

  const size_t common = std::min(a.tokens.size(), b.tokens.size());
  size_t first = common;
  for (size_t i = 0; i < common; ++i) {
    if (a.tokens[i] != b.tokens[i]) {
      first = i;
      break;
    }
  }
  v.identical = first == common && a.tokens.size() == b.tokens.size();
  // Logit rows compared: every position up to and including the divergence
  // (a run that ended on an unnamed end-of-generation token has one row more).
  const size_t last_row = v.identical ? std::max(a.logits.size(), b.logits.size()) : first + 1;
  v.logits_identical = true;
  for (size_t i = 0; i < last_row; ++i) {
    const bool in_a = i < a.logits.size(), in_b = i < b.logits.size();
    if (!in_a && !in_b) break;
    if (!in_a || !in_b) {  // one side had finished: nothing to measure, but not the same
      v.logits_identical = false;
      continue;
    }
    if (a.logits[i].size() != b.logits[i].size()) {  // different vocabularies
      v.logits_identical = false;
      v.max_logit_diff = std::numeric_limits<float>::infinity();
      continue;
    }
    if (!same_bits(a.logits[i], b.logits[i])) v.logits_identical = false;
    for (size_t k = 0; k < a.logits[i].size(); ++k) {
      v.max_logit_diff = std::max(v.max_logit_diff, logit_distance(a.logits[i][k], b.logits[i][k]));
    }
  }
  if (v.identical) return v;

  v.first_divergence = static_cast<int32_t>(first);
  auto token_at = [first](const GenerationRecord& r, int32_t& token, std::string& text) {
    if (first < r.tokens.size()) {
      token = r.tokens[first];
      if (first < r.token_texts.size()) text = r.token_texts[first];
    }
  };
  token_at(a, v.token_a, v.token_text_a);
  token_at(b, v.token_b, v.token_text_b);
  if (first < a.positions.size()) {
    v.divergence_position = a.positions[first];
  } else if (first < b.positions.size()) {
    v.divergence_position = b.positions[first];
  }
  return v;
}

InvariancePrompt InvariancePrompt::chat(std::vector<ChatMessage> messages) {
  InvariancePrompt p;
  if (!messages.empty()) p.text = messages.back().content;
  p.messages = std::move(messages);
  return p;
}

Result<InvarianceReport> check_invariance(const InvarianceSide& a, const InvarianceSide& b,
                                          const std::vector<std::string>& prompts, const InvarianceOptions& options,
                                          const std::function<bool(int32_t done, int32_t total)>& progress) {
  std::vector<InvariancePrompt> raw;
  for (const std::string& p : prompts) raw.emplace_back(p);
  return check_invariance(a, b, raw, options, progress);
}

Result<InvarianceReport> check_invariance(const InvarianceSide& a, const InvarianceSide& b,
                                          const std::vector<InvariancePrompt>& prompts,
                                          const InvarianceOptions& options,
                                          const std::function<bool(int32_t done, int32_t total)>& progress) {
  if (options.max_tokens < 1) return Error{fmt::format("max tokens = {} must be at least 1", options.max_tokens)};
  SamplingParams checked_sampling = options.sampling;
  checked_sampling.max_tokens = options.max_tokens;
  if (Status s = checked_sampling.validate(); !s.ok()) return Error{"sampling parameters: " + s.error()};
  if (checked_sampling.temperature != 0.0f && checked_sampling.seed == 0) {
    return Error{"a sampled check needs a fixed seed (seed 0 picks a different random seed on each side)"};
  }
  for (const InvarianceSide* side : {&a, &b}) {
    if (side->concurrency < 1 || side->concurrency > kMaxInvarianceConcurrency) {
      return Error{fmt::format("{} = {} is out of range [1, {}]", kConcurrencyKey, side->concurrency,
                               kMaxInvarianceConcurrency)};
    }
  }

  const int32_t total = 2 * static_cast<int32_t>(prompts.size());
  int32_t done = 0;
  const std::function<bool()> keep_going = [&] { return !progress || progress(done, total); };
  if (!keep_going()) return Error{"cancelled"};

  std::vector<PromptRun> runs[2];
  InvarianceRunStats stats[2];
  const InvarianceSide* sides[2] = {&a, &b};
  for (int s = 0; s < 2; ++s) {
    const char* name = s == 0 ? "a" : "b";
    // Loading is cancellable too: the app's Cancel should not wait for a model load.
    bool cancelled = false;
    Result<std::unique_ptr<Engine>> engine =
        Engine::create(sides[s]->config, [&](double, std::string_view) {
          cancelled = !keep_going();
          return !cancelled;
        });
    if (cancelled) return Error{"cancelled"};
    if (!engine.ok()) return Error{fmt::format("{}: {}", name, engine.error())};
    // Every generated token's logits are kept for the comparison, both
    // sides' at once: refused up front when that would not fit (a 150k-token
    // vocabulary takes 0.6 MB a token).
    if (s == 0) {
      const double vocab = (*engine)->model_info().vocab_size;
      const double bytes = 2.0 * static_cast<double>(prompts.size()) * (options.max_tokens + 1.0) * vocab * 4.0;
      if (bytes > static_cast<double>(kMaxKeptLogitsBytes)) {
        const int64_t fits = static_cast<int64_t>(static_cast<double>(kMaxKeptLogitsBytes) /
                                                  (2.0 * static_cast<double>(prompts.size()) * vocab * 4.0)) - 1;
        return Error{fmt::format("the logits kept for the comparison would take {:.1f} GiB ({} prompt{} x {} "
                                 "tokens x a {}-token vocabulary x 2 sides, more than {} GiB): ask for at most {} "
                                 "tokens, or fewer prompts",
                                 bytes / (1 << 30), prompts.size(), prompts.size() == 1 ? "" : "s",
                                 options.max_tokens, static_cast<int64_t>(vocab), kMaxKeptLogitsBytes >> 30,
                                 std::max<int64_t>(fits, 1))};
      }
    }
    for (const InvariancePrompt& prompt : prompts) {
      Result<PromptRun> run = run_prompt(**engine, *sides[s], prompt, options, keep_going, stats[s]);
      if (!run.ok()) {
        if (run.error() == "cancelled") return Error{"cancelled"};
        // What the side's engine warned about at load often says why (a
        // pool too small for the prompt is reported as the context's size).
        std::string message = fmt::format("{}: {}", name, run.error());
        for (const std::string& w : (*engine)->warnings()) message += fmt::format("\n{}: warning: {}", name, w);
        return Error{message};
      }
      runs[s].push_back(std::move(run).value());
      ++done;
      if (!keep_going()) return Error{"cancelled"};
    }
    const KvStats kv = (*engine)->kv_stats();
    stats[s].num_prefix_hit_tokens = kv.num_prefix_hit_tokens;
    stats[s].num_preemptions = kv.num_preemptions;
    stats[s].num_swapped_out_blocks = kv.num_swapped_out_blocks;
    stats[s].backend = (*engine)->model_info().backend;
    stats[s].max_model_len = (*engine)->config().max_model_len;
    std::vector<std::string>& warnings = stats[s].warnings;
    warnings = (*engine)->warnings();
    for (size_t i = 0; i < runs[s].size(); ++i) {
      for (const std::string& w : runs[s][i].warnings) {
        warnings.push_back(prompts.size() > 1 ? fmt::format("prompt {}: {}", i + 1, w) : w);
      }
    }
  }

  InvarianceReport report;
  report.a = a;
  report.b = b;
  report.stats_a = stats[0];
  report.stats_b = stats[1];
  for (size_t i = 0; i < prompts.size(); ++i) {
    PromptVerdict v = compare_runs(runs[0][i].record, runs[1][i].record);
    v.prompt = prompts[i].text;
    v.chat = prompts[i].is_chat();
    v.num_prompt_tokens = static_cast<int32_t>(runs[0][i].prompt_tokens.size());
    v.num_prompt_tokens_b = static_cast<int32_t>(runs[1][i].prompt_tokens.size());
    v.same_prompt = runs[0][i].prompt_tokens == runs[1][i].prompt_tokens;
    report.prompts.push_back(std::move(v));
  }
  return report;
}

}  // namespace kvscope
