// EngineEvent: one thing the engine did, for the event log, the inspector's
// trace panel and Chrome-trace export (kvscope/chrome_trace.h).
#pragma once

#include <cstdint>

#include "kvscope/request.h"

namespace kvscope {

enum class EngineEventType : uint8_t {
  StepBegin,    // value: step number
  StepEnd,      // value: tokens in the batch, value2: sequences in the batch
  Admit,        // request joins the running set; value: prompt tokens
  Schedule,     // request gets rows this step; value: rows
  Allocate,     // value: blocks allocated for the request this step
  CacheHit,     // value: prompt tokens served from the prefix cache
  CopyOnWrite,  // value: source block, value2: new block
  Preempt,      // value: 0 recompute, 1 swap
  SwapOut,      // value: blocks copied to swap space
  SwapIn,       // value: blocks copied back
  Evict,        // value: cached-free blocks whose prefix hash was dropped for reuse
  Finish,       // value: FinishReason
  KvUsage,      // counter sample: value used blocks, value2 cached-free blocks
  Cascade,      // request's rows attended a shared prefix in one pass with others;
                // value: shared tokens, value2: sequences in the pass
  Verify,       // speculative decoding checked the request's draft;
                // value: draft tokens accepted, value2: draft tokens proposed
  RankForward,  // tensor parallelism (tp > 1): one rank's part of the step's forward pass;
                // time_s: when the rank began it, value: rank, value2: its duration in nanoseconds.
                // Recorded once the pass is over, in order of begin time, so the log's times never run backwards.
};

const char* engine_event_type_name(EngineEventType type);

struct EngineEvent {
  double time_s = 0.0;   // since the engine was created
  EngineEventType type = EngineEventType::StepBegin;
  RequestId request = 0;  // 0 when not about one request
  int32_t index = 0;      // which of the request's n completions
  int64_t value = 0;
  int64_t value2 = 0;
};

}  // namespace kvscope
