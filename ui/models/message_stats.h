// MessageStats: what the chat shows under an assistant reply (tokens, time to
// first token, tok/s, prompt tokens served by the prefix cache, preemptions,
// the seed that reproduces it; with speculative decoding, draft tokens
// accepted / proposed and the engine's estimated speed-up; with context
// overflow, the tokens dropped from the middle of the context), one per
// alternative reply. Stored with the
// message as JSON ({"alternatives": [{...}, ...]}) so a saved conversation
// shows the same line after a restart, and so exports carry the figures.
#pragma once

#include <vector>

#include <QString>

#include "engine_types.h"

namespace kvscope::ui {

struct MessageStats {
  QString finish;  // finish_reason_name(): "stop", "length", "cancelled", ...
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;
  int generated_tokens = 0;
  int preemptions = 0;
  double time_to_first_token_s = 0.0;
  double total_time_s = 0.0;
  double tokens_per_s = 0.0;
  quint64 seed = 0;
  // Speculative decoding (RequestStats): draft tokens proposed and accepted,
  // and the estimated decode speed-up against no speculation (0: none).
  int draft_tokens = 0;
  int accepted_draft_tokens = 0;
  double spec_speedup_estimate = 0.0;
  // Context overflow (RequestStats): shifts, and tokens that left the middle
  // of the context (by shifts, or from the prompt by truncate_middle), so the
  // reply was written without having seen all of the conversation.
  int context_shifts = 0;
  int dropped_tokens = 0;

  static MessageStats fromFinish(const FinishInfo& info);
  bool operator==(const MessageStats&) const = default;
};

// {"alternatives": [{"finish": ..., "prompt_tokens": ..., ...}, ...]}
QString messageStatsToJson(const std::vector<MessageStats>& stats);
// The inverse; unknown keys are ignored, missing ones stay zero, and text that
// is not such an object gives an empty list (an old or hand-edited message
// simply shows no stats).
std::vector<MessageStats> messageStatsFromJson(const QString& json);

// One line for under the reply, e.g. "42 tokens · first token 0.12 s ·
// 230.5 tok/s · 96 of 120 prompt tokens from cache · drafts accepted 41 /
// 46 · est. 1.86× faster · 512 tokens dropped from the middle · stop".
QString messageStatsLine(const MessageStats& stats);

}  // namespace kvscope::ui
