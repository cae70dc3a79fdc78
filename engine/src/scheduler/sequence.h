// Sequence: the engine's state for one request. A sequence is "tokens it
// should have" (prompt + generated) and "tokens computed so far" (whose K/V are
// in its blocks); prefill, chunked prefill and decode are all the same thing:
// compute the tokens not yet computed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kv/block_table.h"
#include "kvscope/request.h"
#include "runtime/sampler.h"
#include "scheduler/stop_matcher.h"
#include "tokenizer/streaming_detokenizer.h"

namespace kvscope {

enum class SequenceState { Waiting, Running, Finished };

struct Sequence {
  using Clock = std::chrono::steady_clock;

  Sequence(RequestId id_, std::vector<int32_t> prompt, const SamplingParams& params,
           std::function<void(const TokenEvent&)> on_event_, const Tokenizer& tokenizer,
           int32_t block_size)
      : id(id_), tokens(std::move(prompt)), num_prompt_tokens(static_cast<int32_t>(tokens.size())),
        sampler(params), on_event(std::move(on_event_)), detokenizer(tokenizer),
        stop(params.stop), table(block_size) {}

  RequestId id;
  std::vector<int32_t> tokens;  // [prompt + generated]
  int32_t num_prompt_tokens;
  int32_t num_computed = 0;     // tokens whose K/V are stored
  int32_t max_total_tokens = 0; // prompt + max_tokens, capped by max_model_len
  SequenceState state = SequenceState::Waiting;

  Sampler sampler;
  std::function<void(const TokenEvent&)> on_event;
  StreamingDetokenizer detokenizer;
  StopMatcher stop;
  BlockTable table;

  Clock::time_point submitted_at = Clock::now();
  Clock::time_point first_token_at{};

  int32_t num_generated() const { return static_cast<int32_t>(tokens.size()) - num_prompt_tokens; }
  int32_t num_uncomputed() const { return static_cast<int32_t>(tokens.size()) - num_computed; }
};

}  // namespace kvscope
