// The invariance checker (kvscope/invariance_check.h): parse the two sides,
// run every prompt on each, compare token by token and logit by logit.
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

#include "kernels/cpu/paged_attention.h"
#include "context_shift.h"
#include "runtime/cascade_plan.h"
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

bool InvarianceReport::all_identical() const {
  return std::all_of(prompts.begin(), prompts.end(), [](const PromptVerdict& v) { return v.identical; });
}

std::vector<std::string> InvarianceReport::unexercised() const {
  std::vector<std::string> notes;
  const auto check = [&notes](const char* name, const InvarianceSide& side, const InvarianceSide& other,
                              const InvarianceRunStats& stats) {
    const EngineConfig& c = side.config;
    const EngineConfig& o = other.config;
    // auto against on is on against not-on: auto staying out is the point.
    const bool auto_against_on = c.cascade == CascadeMode::Auto && o.cascade == CascadeMode::On;
    if (c.cascade != CascadeMode::Off && c.cascade != o.cascade && !auto_against_on && stats.num_cascade_steps == 0) {
      // A group's prefix is whole shared blocks already computed, rounded
      // down to attention tiles (runtime/cascade_plan.h): the block that
      // holds a prompt's last token is never shared.
      // Sequences share blocks only when paged through the prefix cache
      // (the checker's runs are separate requests): name that cause first.
      // auto also needs enough sequences sharing enough (cascade_plan.h).
      const bool is_auto = c.cascade == CascadeMode::Auto;
      const int32_t min_seqs = is_auto ? kAutoCascadeMinSeqs : 2;
      const int32_t min_shared = is_auto ? std::max(kAutoCascadeMinSharedTokens, kAttentionTile) : kAttentionTile;
      std::string why;
      if (!c.paged) {
        why = "paged attention is off: a contiguous request shares no block";
      } else if (!c.prefix_caching) {
        why = "prefix caching is off: separate requests share no block";
      } else if (side.concurrency < min_seqs) {
        why = is_auto ? fmt::format("auto groups at least {} sequences sharing a prefix; concurrency = {} runs "
                                    "fewer: set concurrency={} or more",
                                    min_seqs, side.concurrency, min_seqs)
                      : fmt::format("concurrency = {}: one sequence has no other to share a prefix with; set "
                                    "concurrency=2 or more",
                                    side.concurrency);
      } else {
        why = fmt::format("sequences running together must share at least {} computed tokens of whole "
                          "{}-token blocks: longer prompts with a common start, of {} tokens or more",
                          min_shared, c.block_size,
                          (min_shared + c.block_size - 1) / c.block_size * c.block_size + 1);
      }
      notes.push_back(fmt::format("{}: cascade = {}, but no step ran a cascade pass ({})", name,
                                  cascade_mode_name(c.cascade), why));
    }
    if (side.concurrency > 1 && side.concurrency != other.concurrency && stats.max_checked_batch_seqs <= 1) {
      notes.push_back(fmt::format("{}: concurrency = {}, but no step ran the checked request beside another "
                                  "sequence{}",
                                  name, side.concurrency,
                                  c.policy == SchedulingPolicy::Static
                                      ? " (policy = static runs a batch to its end before admitting more)"
                                      : ""));
    }
    if (c.preemption != o.preemption && stats.num_preemptions == 0) {
      notes.push_back(fmt::format("{}: preemption = {}, but no sequence was preempted (the KV pool never ran "
                                  "out: fewer num_blocks and more concurrency make it)",
                                  name, preemption_mode_name(c.preemption)));
    } else if (c.preemption == PreemptionMode::Swap && o.preemption != PreemptionMode::Swap &&
               stats.num_preemptions > 0 && stats.num_swapped_out_blocks == 0) {
      notes.push_back(fmt::format("{}: preemption = swap, but every preemption recomputed (the swap space never "
                                  "had room for the sequence's blocks: raise swap_space)",
                                  name));
    }
    if (c.spec != SpecMethod::Off && c.spec != o.spec) {
      if (stats.num_draft_tokens == 0) {
        notes.push_back(fmt::format("{}: spec = {}, but no draft token was verified", name, spec_method_name(c.spec)));
      } else if (stats.num_spec_steps * 4 < stats.num_decode_steps) {
        // Speculation pauses for a sequence whose drafts do not pay (a draft
        // priced like the model never does): then few steps verified any.
        notes.push_back(fmt::format("{}: spec = {}, but only {} of {} decoding steps verified draft tokens "
                                    "(speculation pauses where drafts do not pay)",
                                    name, spec_method_name(c.spec), stats.num_spec_steps, stats.num_decode_steps));
      }
    }
    if (c.prefix_caching && !o.prefix_caching && stats.num_prefix_hit_tokens == 0) {
      notes.push_back(fmt::format("{}: prefix caching is on, but no prompt token came from the cache (no prompt "
                                  "repeated a whole block of an earlier one)",
                                  name));
    }
  };
  check("a", a, b, stats_a);
  check("b", b, a, stats_b);
  return notes;
}

std::vector<std::string> InvarianceReport::expected_differences() const {
  std::vector<std::string> notes;
  const EngineConfig& x = a.config;
  const EngineConfig& y = b.config;
  const auto differs = [&](std::string_view key, std::string_view why) {
    const std::string va = setting_text(x, key), vb = setting_text(y, key);
    if (va != vb) notes.push_back(fmt::format("{} differs (a: {}, b: {}): {}", key, va, vb, why));
  };
  differs("model_path", "the sides run different models");
  differs("kv_cache_type", "the two types store different numbers, so a divergence is expected; invariance holds "
                           "within one type");
  if (!stats_a.backend.empty() && !stats_b.backend.empty() && stats_a.backend != stats_b.backend) {
    notes.push_back(fmt::format("the sides ran on different backends (a: {}, b: {}): their kernels add in other "
                                "orders, so the logits differ by rounding and a near-tie may go either way",
                                stats_a.backend, stats_b.backend));
  }
  // The GPU settings do nothing on the CPU ("" : not known, as in a report
  // built by hand).
  const bool on_gpu = stats_a.backend != "cpu" || stats_b.backend != "cpu";
  if (on_gpu) {
    differs("gpu_matmul", "the two matmuls round differently (about 1e-6), so the logits differ and a near-tie may "
                          "go either way");
    if (x.gpu_prefill_gemm || y.gpu_prefill_gemm) {
      notes.push_back(fmt::format("gpu_prefill_gemm is on (a: {}, b: {}): a prompt row's bits then depend on how "
                                  "its prefill is chunked and batched",
                                  x.gpu_prefill_gemm, y.gpu_prefill_gemm));
    }
  }
  // Context shifts drop whole blocks after context_keep's: sides that cut
  // at other places hold different contexts after the first shift.
  const bool shifted = stats_a.num_context_shifts > 0 || stats_b.num_context_shifts > 0;
  if (shifted && x.context_overflow == ContextOverflow::Shift && y.context_overflow == ContextOverflow::Shift) {
    const auto kept_blocks = [](const EngineConfig& c) {
      return plan_context_shift(c.max_model_len - 1, c.block_size, c.context_keep, c.max_model_len);
    };
    const ContextShiftPlan pa = kept_blocks(x), pb = kept_blocks(y);
    if (pa.keep_blocks * x.block_size != pb.keep_blocks * y.block_size ||
        pa.drop_blocks * x.block_size != pb.drop_blocks * y.block_size) {
      notes.push_back(fmt::format("the sides' context shifts drop different tokens (a: keeps {} and drops {}, b: "
                                  "keeps {} and drops {}; a shift works in whole {}- and {}-token blocks after "
                                  "context_keep), so after the first shift they hold different contexts",
                                  pa.keep_blocks * x.block_size, pa.drop_blocks * x.block_size,
                                  pb.keep_blocks * y.block_size, pb.drop_blocks * y.block_size, x.block_size,
                                  y.block_size));
    }
  }
  // Recompute after a shift prefills the kept tokens without the dropped
  // middle (docs/context-overflow.md): the one exception to preemption
  // keeping the numbers.
  for (const auto& [name, c, st] : {std::tuple{"a", &x, &stats_a}, std::tuple{"b", &y, &stats_b}}) {
    const bool recomputed = c->preemption == PreemptionMode::Recompute || st->num_swapped_out_blocks == 0;
    if (st->num_context_shifts > 0 && st->num_preemptions > 0 && recomputed) {
      notes.push_back(fmt::format("{}: sequences were preempted and recomputed where contexts shift: a shifted "
                                  "sequence recomputed prefills its kept tokens without the dropped middle, so its "
                                  "later tokens may differ (preemption = swap, with room in swap_space, keeps them)",
                                  name));
    }
  }
  // The order of a layer's sums: fast at tp = 1 is the plain runner's; fast
  // at tp > 1 adds the ranks' parts after them; deterministic adds fixed
  // chunks in a fixed order at every tp, which is the same at every tp but
  // not the plain runner's order (docs/tensor-parallel.md). Sides with the
  // same order keep the invariance; sides with different ones round apart.
  // On the CPU only: the CUDA backend runs one rank and ignores tp_reduce.
  const bool on_cuda = stats_a.backend == "cuda" || stats_b.backend == "cuda";
  const auto sum_order = [](const EngineConfig& c) { return c.tp_reduce == TpReduce::Deterministic ? 0 : c.tp; };
  if (!on_cuda && sum_order(x) != sum_order(y)) {
    notes.push_back(fmt::format("tensor parallelism differs (a: tp {} {}, b: tp {} {}): the sides add a layer's "
                                "sums in different orders (tp_reduce = fast at tp 1 is the plain sum, at tp > 1 "
                                "the ranks' parts are added after it; deterministic adds fixed chunks, the same at "
                                "every tp), so the logits change by rounding and a near-tie may go either way",
                                x.tp, setting_text(x, "tp_reduce"), y.tp, setting_text(y, "tp_reduce")));
  }
  return notes;
}

std::string InvarianceReport::different_prompt_reason() const {
  return a.config.model_path != b.config.model_path ? "the two models tokenize the prompt differently"
                                                    : "their settings cut the prompt differently; each side's "
                                                      "warnings say how";
}

int32_t InvarianceReport::num_identical() const {
  return static_cast<int32_t>(
      std::count_if(prompts.begin(), prompts.end(), [](const PromptVerdict& v) { return v.identical; }));
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
