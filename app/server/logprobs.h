// Log-probabilities for the `logprobs` / `top_logprobs` fields, from the raw
// logits Engine hands to GenerationRequest::on_logits (before penalties and
// temperature, so they are the model's own distribution, as OpenAI reports).
//   log p(t) = logit[t] - log(sum_j exp(logit[j]))
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::server {

struct TopLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

// log(sum exp(logits[0..n))), computed around the maximum so that it does not overflow.
float log_sum_exp(const float* logits, int32_t n);

// The k most likely tokens of the row, most likely first (ties: lower id
// first), with their log-probabilities; k is capped at n.
std::vector<TopLogprob> top_logprobs(const float* logits, int32_t n, float log_sum_exp, int32_t k);

// One token's entry: its bytes (may be part of a UTF-8 character), its
// log-probability and the alternatives asked for. A generated token's, or
// with echo a prompt token's.
struct TokenLogprob {
  int32_t token = -1;
  std::string bytes;
  float logprob = 0.0f;
  std::vector<TopLogprob> top;
  std::vector<std::string> top_bytes;  // [top.size()]
  // False for the prompt's first token: nothing before it scores it (its
  // logprob and alternatives are null, as OpenAI writes them).
  bool scored = true;
  // Where its text starts in the choice's text (with echo, the prompt's text
  // first), in characters: completions' text_offset. A token the engine
  // added (BOS) is not in that text; a generated token's comes from the
  // engine (TokenEvent::text_offset), so a hidden token, part of a
  // character or a U+FFFD sits where the text shows it.
  int64_t text_offset = 0;
};

}  // namespace kvscope::server
