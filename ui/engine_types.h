// Value types that cross the GUI <-> engine-worker boundary through queued
// signals, and their Qt metatype declarations. Only public engine headers are
// included: the UI sees values, never the engine (docs/architecture.md, Threading).
#pragma once

#include <memory>
#include <vector>

#include <QMetaType>

#include "kvscope/chat_message.h"
#include "kvscope/engine_config.h"
#include "kvscope/engine_event.h"
#include "kvscope/engine_snapshot.h"
#include "kvscope/model_info.h"
#include "kvscope/request.h"
#include "kvscope/sampling_params.h"

namespace kvscope::ui {

using SnapshotPtr = std::shared_ptr<const EngineSnapshot>;
using ChatHistory = std::vector<ChatMessage>;
// Engine events taken from the engine while tracing (Engine::take_events), for
// the Trace panel.
using EventBatch = std::vector<EngineEvent>;

// N synthetic requests started at once: a shared prefix (so their first blocks
// are shared through the prefix cache) plus a unique suffix each.
struct WorkloadSpec {
  int num_requests = 32;
  int prompt_len = 96;         // tokens, shared prefix included
  int output_len = 64;         // generated tokens per request (EOS ignored)
  int shared_prefix_len = 64;  // tokens common to every request
  // New requests per second after the first (Poisson arrivals, seeded); 0:
  // all at once.
  double arrival_rate_per_s = 0.0;
};

// A run of characters in a text: [begin, begin + length), in UTF-16 code
// units (QString indices). The worker marks, in each streamed chunk of a
// reply, the text of tokens that were accepted speculative drafts.
struct TextSpan {
  int begin = 0;
  int length = 0;
  bool operator==(const TextSpan&) const = default;
};
using TextSpans = std::vector<TextSpan>;

// What the worker reports when a request ends.
struct FinishInfo {
  int index = 0;  // which of the request's n completions ended
  FinishReason reason = FinishReason::None;
  RequestStats stats;
  std::string error;  // when reason == Error
};

// Registers every type above with Qt's metatype system (idempotent). Call once
// before the first queued connection that carries one of them.
void registerEngineMetaTypes();

}  // namespace kvscope::ui

Q_DECLARE_METATYPE(kvscope::EngineConfig)
Q_DECLARE_METATYPE(kvscope::ModelInfo)
Q_DECLARE_METATYPE(kvscope::SamplingParams)
Q_DECLARE_METATYPE(kvscope::ui::SnapshotPtr)
Q_DECLARE_METATYPE(kvscope::ui::ChatHistory)
Q_DECLARE_METATYPE(kvscope::ui::WorkloadSpec)
Q_DECLARE_METATYPE(kvscope::ui::FinishInfo)
Q_DECLARE_METATYPE(kvscope::ui::EventBatch)
Q_DECLARE_METATYPE(kvscope::ui::TextSpans)
