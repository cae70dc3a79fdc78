// What a synthetic workload (WorkloadSpec) submits: its prompts as token ids,
// and the presets the workload dialog offers. Pure functions, no engine: the
// engine worker (app/gui/engine_worker.cpp) submits what workloadPrompts
// returns, and tests/ui/workload_prompts_test.cpp checks it without a model.
#pragma once

#include <cstdint>
#include <vector>

#include <QString>

#include "engine_types.h"

namespace kvscope::ui {

// A named WorkloadSpec for the dialog's preset list.
struct WorkloadPreset {
  QString key;    // for --workload-preset: "system-prompt"
  QString label;  // shown in the dialog
  WorkloadSpec spec;
};

// The shared system prompt of the "system-prompt" preset, in tokens.
inline constexpr int kSystemPromptTokens = 2000;

// N requests sharing a 2,000-token system prompt, each with a short prompt of
// its own, all at once: with prefix caching they share the system prompt's
// blocks, which is what cascade attention reads once for all of them.
WorkloadSpec systemPromptWorkload(int num_requests = 32);

// Every preset, in the dialog's order.
std::vector<WorkloadPreset> workloadPresets();

// The preset called `key` with `num_requests` requests (> 0; otherwise the
// preset's own count); false when there is none of that name.
bool findWorkloadPreset(const QString& key, int num_requests, WorkloadSpec* spec);

// The prompts of spec's requests in arrival order: spec.shared_prefix_len
// (clamped to the prompt length) ids common to all, then each request's own
// suffix of at least one token, different from every other request's
// suffix whenever the vocabulary has room for that many. Ids are drawn from
// the middle of a vocabulary of `vocab_size` (above control and byte tokens,
// below the rarest merges, as kvscope-cli's workloads); `seed` fixes them.
std::vector<std::vector<int32_t>> workloadPrompts(const WorkloadSpec& spec, int32_t vocab_size, uint64_t seed);

}  // namespace kvscope::ui
