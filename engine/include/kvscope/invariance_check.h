// The invariance checker: the engine promises the same greedy output whatever
// the serving mode (block size, paging, prefix caching, cascade attention,
// chunked prefill, thread count, how many other requests share the batch).
// check_invariance runs the same prompts under two engine configurations and
// says, per prompt, whether the generated tokens are identical, and if not
// where they first differ and by how much the logits had drifted by then.
//
//   KVSCOPE_ASSIGN(InvarianceSide a, parse_invariance_side("block_size=16", base));
//   KVSCOPE_ASSIGN(InvarianceSide b, parse_invariance_side("block_size=1,concurrency=8", base));
//   KVSCOPE_ASSIGN(InvarianceReport report, check_invariance(a, b, prompts, {}));
//   if (!report.all_identical()) ...
//
// Front ends: `kvscope-cli check` (app/cli/check_command.cpp) and the app's
// invariance panel. docs/invariance.md describes both.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvscope/chat_message.h"
#include "kvscope/engine_config.h"
#include "kvscope/result.h"
#include "kvscope/sampling_params.h"

namespace kvscope {

// The largest concurrency a side may ask for (the checked request included).
inline constexpr int32_t kMaxInvarianceConcurrency = 256;

// One of the two configurations compared.
//
// Concurrency N: the checked prompt is submitted alone and the engine stepped
// until the checked request has produced its first token (its prefill is
// done); then N-1 companion requests with the same prompt are submitted,
// sampled (temperature 0.8, distinct fixed seeds, the same max_tokens), and
// the engine runs to idle. With prefix caching on, the companions hit the
// prefix cache for the prompt's full blocks, so they share physical blocks
// with the checked request (what cascade attention groups by), and their
// prefill chunks run in the same steps as its decode steps. Only the checked
// request (completion 0) is recorded and compared.
struct InvarianceSide {
  EngineConfig config;       // model_path included: the engine is created from it
  int32_t concurrency = 1;   // requests in flight: the checked one + N-1 companions, 1..256
  std::string spec;          // the items it was parsed from, trimmed ("block_size=1,concurrency=8"), for reports
};

// "k=v,k=v" (spaces around keys and values ignored; "" is the base config)
// applied on top of `base`. Keys:
//  - every key of the setting table (engine_settings(): threads, block_size,
//    paged, prefix_caching, cascade, max_batched_tokens, tp, tp_reduce, ...),
//    the value parsed by that row (booleans: true/false, on/off, yes/no, 1/0);
//    "tp=1,tp_reduce=deterministic" vs "tp=4,tp_reduce=deterministic" is
//    identical bit for bit (docs/tensor-parallel.md), "tp=1" vs "tp=2"
//    (fast) shows the reduction order's drift;
//  - concurrency=N, 1..256;
//  - the short aliases invariance_aliases() lists (kv_mode=paged|contiguous,
//    prefix_cache=on|off, chunk=N, kv_type=...).
// Errors: "unknown setting 'bogus' (known: threads, ..., concurrency,
// kv_mode, prefix_cache, chunk, kv_type)", the row's parse message for a bad value,
// "concurrency = 0 is out of range [1, 256]", "'x' is not key=value", a
// key given twice, and the resulting config's validate() problems.
Result<InvarianceSide> parse_invariance_side(std::string_view spec, const EngineConfig& base);

// The prompts-file format of `kvscope-cli check --prompts` and the app's
// Invariance panel: blocks of lines separated by one or more blank lines
// (lines of only spaces and tabs count as blank; a trailing '\r' is dropped);
// each block is one prompt, its lines joined with '\n'.
std::vector<std::string> split_prompt_blocks(std::string_view text);

// A short name the issue uses for a setting-table row, with how its values
// map onto the row's.
struct InvarianceAlias {
  std::string key;                                            // "kv_mode"
  std::string setting;                                        // the table row's key: "paged"
  std::vector<std::pair<std::string, std::string>> values;    // alias value -> row text; empty: passed as is
};
const std::vector<InvarianceAlias>& invariance_aliases();
// Every key parse_invariance_side accepts, table keys first, then
// "concurrency", then the aliases.
std::vector<std::string> invariance_keys();

// One prompt to check: raw text, or a chat rendered with the model's own
// chat template as the app's chat, `generate --chat` and the server's chat
// endpoint submit it (so a difference seen in a conversation can be checked
// on the very tokens the conversation ran).
struct InvariancePrompt {
  InvariancePrompt() = default;
  explicit InvariancePrompt(std::string text_) : text(std::move(text_)) {}
  static InvariancePrompt chat(std::vector<ChatMessage> messages);

  // Raw text: tokenized as is (a BOS in front when the vocabulary asks for
  // one). For a chat, its last message's content, for reports.
  std::string text;
  // Non-empty: a chat ending in the message to answer, rendered with the
  // generation prompt; `text` is then only shown.
  std::vector<ChatMessage> messages;
  bool is_chat() const { return !messages.empty(); }
};

struct InvarianceOptions {
  int32_t max_tokens = 32;  // generated tokens per prompt (overrides sampling.max_tokens)
  // The checked request's sampling. Greedy (temperature 0) by default; a
  // sampled run is also deterministic when seed != 0 (seed 0 is refused:
  // two random seeds would differ by construction).
  SamplingParams sampling = [] {
    SamplingParams p;
    p.temperature = 0.0f;
    return p;
  }();
};

// What one run of one prompt produced: completion 0 of the checked request.
// Built by check_invariance; tests build it by hand for compare_runs.
// An end-of-generation token ends a request without a token event; under
// greedy sampling (no penalties) check_invariance names it (the argmax of its
// logits) and it is the last of `tokens`; otherwise `logits` has that one
// row more than `tokens`.
struct GenerationRecord {
  std::vector<int32_t> tokens;               // generated ids, in order
  std::vector<int32_t> positions;            // [logits rows] sequence position of each (prompt length + i)
  std::vector<std::vector<float>> logits;    // [tokens (+1)][vocab] raw logits each token was sampled from
  std::vector<std::string> token_texts;      // [tokens] each token's bytes (Engine::token_bytes); may be empty
  std::string text;                          // the streamed text
  std::string finish;                        // finish_reason_name(): "length", "stop", ...
};

struct PromptVerdict {
  std::string prompt;  // InvariancePrompt::text
  bool chat = false;   // the prompt ran as a chat through the model's template
  bool identical = false;          // the same generated tokens, same count
  // Also the raw logits bit for bit at every compared position; false with
  // identical true means drift that has not (yet) changed a token.
  bool logits_identical = false;
  int32_t first_divergence = -1;   // index into the generated tokens; -1 when identical
  int32_t divergence_position = -1;  // sequence position of that token (prompt tokens + index); -1 when identical
  // The tokens at first_divergence; -1 on the side that had already finished
  // (one run stopped earlier than the other).
  int32_t token_a = -1, token_b = -1;
  std::string token_text_a, token_text_b;
  // max |logit_a - logit_b| over every vocabulary entry at every generated
  // position up to and including first_divergence (all common positions when
  // identical); 0 means bitwise equal there. +inf when only one side is NaN.
  float max_logit_diff = 0.0f;
  int32_t num_prompt_tokens = 0;   // as run on side a (BOS included when added)
  int32_t num_prompt_tokens_b = 0; // as run on side b
  // Both sides ran the same prompt ids. Not so when their settings cut the
  // prompt differently (max_model_len, context_overflow, context_keep):
  // then the outputs are of different inputs, and each side's warnings say
  // what was cut.
  bool same_prompt = true;
  std::vector<int32_t> tokens_a, tokens_b;
  std::string text_a, text_b;
  std::string finish_a, finish_b;  // finish_reason_name() of each run
  // Identical, but both replies ended at their first token (end of
  // sequence): one position was compared, which reports should say. Under
  // greedy sampling the end token is named in tokens_a (then alone, with
  // finish "stop"); otherwise tokens_a is empty.
  bool ended_at_once() const {
    return identical && (tokens_a.empty() || (tokens_a.size() == 1 && finish_a == "stop"));
  }
};

// What a side's runs exercised, summed over its prompts, so a report can show
// that the mode under test really happened (cascade passes ran, companions
// shared steps, the prefix cache hit) rather than silently not engaging.
struct InvarianceRunStats {
  int64_t num_steps = 0;               // engine steps that ran work
  int32_t max_batch_seqs = 0;          // most sequences in one step
  // Most sequences in one step while the checked request was running: under
  // policy = static the companions run only after it, so batching was not
  // exercised however large max_batch_seqs is.
  int32_t max_checked_batch_seqs = 0;
  int64_t num_mixed_steps = 0;         // steps with both prefill and decode rows
  int64_t num_cascade_steps = 0;       // steps with at least one cascade attention pass
  int64_t num_graph_steps = 0;         // steps the GPU replayed as a captured graph (gpu_graphs)
  int64_t num_prefix_hit_tokens = 0;   // prompt tokens whose KV came from the prefix cache
  int64_t num_decode_steps = 0;        // steps with at least one decode row
  int64_t num_spec_steps = 0;          // steps that verified at least one draft token
  int64_t num_draft_tokens = 0;        // speculative draft tokens verified
  int64_t num_accepted_draft_tokens = 0;  // of those, accepted
  int64_t num_preemptions = 0;         // sequences preempted (recompute or swap)
  int64_t num_swapped_out_blocks = 0;  // blocks copied to the swap pool
  int64_t num_context_shifts = 0;      // context shifts of the checked request (context_overflow = shift)
  std::string backend;                 // what ran the model: "cpu", "cuda" (ModelInfo::backend); "" unknown
  // The context the side's engine held: max_model_len as resolved (0 asks
  // for the model's, capped by what the KV pool holds: num_blocks, kv_budget).
  int32_t max_model_len = 0;
  // What the side's engine and its requests warned about, as generate
  // prints them: a setting adjusted at load (threads above the cores), a
  // prompt cut to fit ("prompt 2: ..." when there are several prompts).
  std::vector<std::string> warnings;
};

struct InvarianceReport {
  InvarianceSide a, b;
  std::vector<PromptVerdict> prompts;  // in the order given
  InvarianceRunStats stats_a, stats_b;
  bool all_identical() const;
  int32_t num_identical() const;
  // What a side asked for but its runs never did, where the two sides differ
  // in it, one sentence each ("b: cascade = on, but no step ran a cascade
  // pass: ..."): an "identical" verdict then says nothing about that setting.
  // Cascade passes, steps of several sequences (concurrency), speculative
  // drafts, prefix-cache hits, preemptions. Empty when every difference was
  // exercised.
  std::vector<std::string> unexercised() const;
  // Settings in which the sides differ that change the numbers by design,
  // one sentence each ("kv_cache_type differs (a: f32, b: q8_0): ..."): a
  // divergence there is expected, not a broken invariance. The model, the
  // KV cache type, the backend that ran, on a GPU the matmul and the cuBLAS
  // prefill GEMM (on at all: its bits follow the chunking), and tensor
  // parallelism when the sides add its sums in different orders. Empty when
  // none applies.
  std::vector<std::string> expected_differences() const;
  // Why a prompt ran as different tokens on the two sides (a verdict whose
  // same_prompt is false): the two models tokenize it differently, or a
  // side's context settings cut it (that side's warnings say how).
  std::string different_prompt_reason() const;
};

// Pure comparison of two runs of one prompt (no engine): fills everything but
// prompt and num_prompt_tokens. Positions compared: the common prefix of the
// two token lists, up to and including the first that differs; when one run is
// a strict prefix of the other, first_divergence is its length and that side's
// token is -1.
PromptVerdict compare_runs(const GenerationRecord& a, const GenerationRecord& b);

// Runs every prompt (raw text, GenerationRequest::prompt) on side a, then on
// side b: one engine per side (Engine::create from side.config), created one
// after the other and freed before the next, prompts one after another on it
// (so with prefix caching on, a later prompt may reuse an earlier one's
// blocks, as in serving). Blocking; safe to call on a background thread.
// `progress(done, total)`, total = 2 * prompts.size(), is called on the
// calling thread while a model loads, between engine steps and after each
// run (done counts finished runs, so the same value repeats); returning false
// stops at once with the error "cancelled". Errors: a side's engine cannot be created
// (prefixed "a: " / "b: "), a prompt is refused by submit, the checked
// request ends with an error, options.sampling is invalid.
Result<InvarianceReport> check_invariance(const InvarianceSide& a, const InvarianceSide& b,
                                          const std::vector<InvariancePrompt>& prompts,
                                          const InvarianceOptions& options,
                                          const std::function<bool(int32_t done, int32_t total)>& progress = {});
// Raw-text prompts.
Result<InvarianceReport> check_invariance(const InvarianceSide& a, const InvarianceSide& b,
                                          const std::vector<std::string>& prompts, const InvarianceOptions& options,
                                          const std::function<bool(int32_t done, int32_t total)>& progress = {});

}  // namespace kvscope
