// Sequence: the engine's state for one completion of a request. A sequence is
// "tokens it should have" (prompt + generated) and "tokens computed so far"
// (whose K/V are in its blocks); prefill, chunked prefill, decode and
// recompute after preemption are all the same thing: compute the tokens not
// yet computed.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kv/block_table.h"
#include "kvscope/engine_snapshot.h"
#include "kvscope/request.h"
#include "runtime/sampler.h"
#include "scheduler/stop_matcher.h"
#include "spec/spec_tracker.h"
#include "tokenizer/streaming_detokenizer.h"

namespace kvscope {

struct Sequence {
  using Clock = std::chrono::steady_clock;

  Sequence(RequestId id_, int32_t index_, std::vector<int32_t> prompt, const SamplingParams& params,
           std::function<void(const TokenEvent&)> on_event_, const Tokenizer& tokenizer, int32_t block_size)
      : id(id_), index(index_), tokens(std::move(prompt)),
        num_prompt_tokens(static_cast<int32_t>(tokens.size())), sampler(params), on_event(std::move(on_event_)),
        detokenizer(tokenizer), stop(params.stop), table(block_size) {}

  RequestId id;
  int32_t index;                // which of the request's n completions
  std::vector<int32_t> tokens;  // [prompt + generated]
  int32_t num_prompt_tokens;
  int32_t num_computed = 0;      // tokens whose K/V are stored
  int32_t max_total_tokens = 0;  // prompt + max_tokens, capped by max_model_len
  int32_t num_cached_tokens = 0; // prompt tokens served by the prefix cache at first admission
  int32_t num_preemptions = 0;
  int32_t num_forks_pending = 0; // parallel sampling: siblings to create at the first token
  // Context overflow (docs/context-overflow.md): tokens dropped from the
  // middle by context shifts (no longer in `tokens`), the shifts, and the
  // prompt tokens truncate_middle dropped before the sequence was made.
  int32_t num_shifted_out_tokens = 0;
  int32_t num_context_shifts = 0;
  int32_t num_truncated_prompt_tokens = 0;
  // The last shift, told on the next token event (TokenEvent::num_dropped_tokens).
  int32_t pending_shift_dropped = 0;
  int32_t pending_shift_from = 0;
  uint64_t hash_seed = 0;        // prefix-hash chain seed (from the request's cache salt)
  SequenceState state = SequenceState::Waiting;

  Sampler sampler;
  std::function<void(const TokenEvent&)> on_event;
  std::function<void(int32_t, int32_t, const float*, int32_t)> on_logits;  // GenerationRequest::on_logits
  // Prompt scoring (GenerationRequest::on_prompt_logits): prompt positions
  // 1 .. num_scored_prompt_positions have been told.
  std::function<void(int32_t, int32_t, const float*, int32_t)> on_prompt_logits;
  int32_t num_scored_prompt_positions = 0;
  StreamingDetokenizer detokenizer;
  StopMatcher stop;
  BlockTable table;  // device block ids, or swap block ids while Swapped

  // Speculative decoding: the tokens proposed to follow `tokens` in this step
  // (its rows verify them; empty between steps and when nothing was proposed),
  // and the sequence's acceptance record and auto-disable state.
  std::vector<int32_t> draft;  // [num_draft]
  SpecTracker spec;
  // Speculation with a draft model: positions whose draft-model K/V are in
  // place (<= num_computed; reset with num_computed, and on swap-out, as the
  // draft's K/V are not swapped).
  int32_t draft_num_computed = 0;
  // For RequestStats::spec_speedup_estimate: forward time of the steps in
  // which it verified a draft and the tokens they emitted, and of the steps
  // in which it decoded one token plainly.
  double spec_forward_time_s = 0.0;
  int32_t num_spec_tokens = 0;
  double plain_forward_time_s = 0.0;
  int32_t num_plain_decode_steps = 0;

  Clock::time_point submitted_at = Clock::now();
  Clock::time_point first_token_at{};

  // Shifted-out tokens still count: max_tokens bounds what was generated, not what is in the context.
  int32_t num_generated() const {
    return static_cast<int32_t>(tokens.size()) + num_shifted_out_tokens - num_prompt_tokens;
  }
  // Whether every prompt token's K/V has been computed (a shift may have dropped some of them).
  bool prompt_computed() const { return num_computed + num_shifted_out_tokens >= num_prompt_tokens; }
  int32_t num_uncomputed() const { return static_cast<int32_t>(tokens.size()) - num_computed; }
  // Whether prompt rows still wait to be scored: row r scores position r + 1,
  // so rows [num_scored_prompt_positions, num_prompt_tokens - 1). All are
  // scored before the first token is sampled (the step that samples it
  // computes the last of them).
  bool scores_prompt() const {
    return on_prompt_logits && num_generated() == 0 && num_scored_prompt_positions < num_prompt_tokens - 1;
  }
  // The first row that needs scoring (rows before it, recomputed after a
  // preemption, need none), and how many of the next `rows` rows do.
  int32_t first_row_to_score() const { return std::max(num_computed, num_scored_prompt_positions); }
  int32_t num_rows_to_score(int32_t rows) const {
    if (!scores_prompt()) return 0;
    return std::max(0, std::min(num_computed + rows, num_prompt_tokens - 1) - first_row_to_score());
  }
  bool finished() const { return state == SequenceState::Finished; }
};

}  // namespace kvscope
