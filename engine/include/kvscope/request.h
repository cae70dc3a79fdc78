// What a client sends (GenerationRequest) and what it gets back, streamed
// (TokenEvent), for one generation.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kvscope/chat_message.h"
#include "kvscope/sampling_params.h"

namespace kvscope {

using RequestId = uint64_t;

enum class FinishReason {
  None,         // still running
  Stop,         // end-of-generation token or a stop string
  Length,       // max_tokens reached
  ContextFull,  // max_model_len reached
  Cancelled,
  Error,
};

const char* finish_reason_name(FinishReason reason);

struct RequestStats {
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_prompt_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  int32_t num_preemptions = 0;
  int32_t num_generated_tokens = 0;
  double time_to_first_token_s = 0.0;  // submit -> first generated token
  double total_time_s = 0.0;           // submit -> finish
  double decode_tokens_per_s = 0.0;    // generated tokens after the first / their time
  uint64_t seed = 0;                   // the seed used (reproduces the text)
  // Speculative decoding (docs/speculative.md): proposals verified, tokens
  // proposed, of those accepted, and times its speculation switched itself off.
  int32_t num_drafts = 0;
  int32_t num_draft_tokens = 0;
  int32_t num_accepted_tokens = 0;
  int32_t num_spec_pauses = 0;
  std::string spec_method;  // the proposer ("ngram", "draft", "early_exit"); empty with speculation off
  // Decode speed with speculation against the same request without it,
  // estimated from forward-pass times (0: no estimate, e.g. nothing was
  // verified): tokens of its verification steps priced at its own plain
  // decode steps' mean forward time (the engine's recent plain decode steps
  // when it had none), plus its plain steps, over the time actually spent.
  double spec_speedup_estimate = 0.0;
  // Context overflow (docs/context-overflow.md): context shifts, and tokens
  // dropped from the middle (by shifts, and from the prompt by truncate_middle).
  int32_t num_context_shifts = 0;
  int32_t num_dropped_tokens = 0;
  // Its context at the end, what the next token would have attended to: the
  // prompt (as truncated) and the generated tokens, less what shifts dropped.
  int32_t num_context_tokens = 0;
};

struct TokenEvent {
  RequestId id = 0;
  int32_t index = 0;         // which of the request's n completions
  int32_t token = -1;        // -1 on an event with no new token (finish, error)
  std::string text;          // newly complete text (whole UTF-8 characters)
  // Where the token's own text starts in the completion's text, in
  // characters (code points) of the text before it. A token that ends inside
  // a character, or shows no text (a hidden control token), sits where the
  // next character will start. (OpenAI completions' logprobs.text_offset.)
  int32_t text_offset = 0;
  bool from_draft = false;   // the token was a speculative draft token the model accepted
  FinishReason finish = FinishReason::None;
  std::string error;         // when finish == Error
  // Context overflow = shift: on the first token after a shift, the
  // num_dropped_tokens tokens that were at context positions
  // [dropped_from, dropped_from + num_dropped_tokens) left the context before it.
  int32_t num_dropped_tokens = 0;
  int32_t dropped_from = 0;
  RequestStats stats;        // filled on the finishing event
};

// The prompt is exactly one of three forms (more than one is an error, so a
// front end cannot half-migrate); Engine::submit turns it into ids in one
// place (engine/src/tokenizer/prompt_builder.h), so every front end gets the
// same BOS rule and tokenisation:
//  - prompt_tokens: run as given, nothing added (benchmarks, replays);
//  - messages: rendered with the model's chat template and the generation
//    prompt, then as text;
//  - prompt (raw text): BOS first when the vocabulary asks for it and the
//    text does not already start with it, then the text tokenised with
//    control tokens written literally ("<|im_start|>") parsed as such.
//    Text with no token of its own (malformed UTF-8, bytes a vocabulary
//    lacks) never becomes a control token; SubmittedPrompt::warnings says
//    what was replaced.
struct GenerationRequest {
  std::vector<int32_t> prompt_tokens;
  std::vector<ChatMessage> messages;
  std::string prompt;
  // With messages: the tools offered to the model, OpenAI's `tools` array as
  // JSON text, rendered by the model's chat template ("" offers none; a
  // template that takes no tools makes submit fail). kvscope/tool_calls.h
  // reads the calls back out of the reply.
  std::string tools_json;
  SamplingParams sampling;
  // Parallel sampling: n completions of one prompt, sharing the prompt's KV
  // blocks (copy-on-write when one of them writes into a shared block).
  int32_t n = 1;
  // Requests with different salts never share prefix-cache blocks (isolation).
  std::string cache_salt;
  // Called on the thread that runs Engine::step(), once per new token and once
  // with finish != None, for each of the n completions (TokenEvent::index).
  std::function<void(const TokenEvent&)> on_event;
  // Called on the stepping thread with the raw logits ([vocab] floats, before
  // penalties and temperature) each new token of completion `index` is sampled
  // from, just before on_event; `position` is where that token will sit in the
  // sequence. For tools that compare runs (the invariance checker); unset
  // costs nothing.
  std::function<void(int32_t index, int32_t position, const float* logits, int32_t vocab)> on_logits;
  // Called on the stepping thread with the raw logits each prompt token after
  // the first is scored by (what the model, having read the prompt before
  // `position`, made of `token`, the prompt's token there), once per position
  // 1 .. prompt length - 1, in order, all before the first token event
  // (OpenAI's echo with logprobs, evaluation harnesses' log-likelihoods;
  // with max_tokens = 0 the prompt is only scored). Set, the request
  // does not read the prefix cache (a cached block's rows were never scored),
  // a step scores a bounded number of rows (kv_plan.h, max_scored_rows: each
  // row's logits come back), and a prompt too long for the context is
  // refused rather than truncated (context_overflow = truncate_middle).
  std::function<void(int32_t position, int32_t token, const float* logits, int32_t vocab)> on_prompt_logits;
  // With on_prompt_logits: the first position told (>= 1); the rows before
  // it need no logits (perplexity scores the second half of a window).
  int32_t first_scored_position = 1;
};

// What Engine::submit made of a request's prompt.
struct SubmittedPrompt {
  std::vector<int32_t> tokens;        // [num_prompt_tokens] the ids that run, BOS included when added
  std::vector<std::string> warnings;  // for a person: text that had no token and what it became
  // context_overflow = truncate_middle: prompt tokens dropped from the middle (0: none).
  int32_t num_dropped_tokens = 0;
};

}  // namespace kvscope
