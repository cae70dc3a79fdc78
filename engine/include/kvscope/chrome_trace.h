// Chrome Trace Event Format export and import of the engine's event log, so a
// session can be opened in Perfetto (ui.perfetto.dev) or chrome://tracing, and
// loaded back by the GUI to replay it.
//
// What the viewer shows (pid 1, "kvscope"):
//   - thread "engine" (tid 1): one complete event ("X") per step, StepBegin to
//     StepEnd, args step/tokens/seqs and the counts of Schedule and Allocate
//     events in the step (those are too many to show one by one);
//     instants ("i", thread scope) for cache_hit, copy_on_write, preempt,
//     swap_out, swap_in, evict and finish;
//   - one async span ("b"/"e", cat "request") per completion, "request <id>"
//     or "request <id>.<index>", from its first Admit to its Finish (spans of
//     requests the log never saw finish are closed at the last timestamp);
//   - counters ("C"): "KV blocks" {used, cached_free} and "batch" {tokens, seqs};
//   - with tensor parallelism, one thread per rank, "rank r" (tid 10 + r):
//     a complete event "forward" (cat "rank") per step, from when that rank
//     began its part of the forward pass, as long as its own thread took.
//
// Exact round trip: every EngineEvent is stored, verbatim, as one record in
// the "kvscope" array of some trace event's args (counters excepted: viewers
// would plot their args), {seq, type, request, index, value, value2, time}.
// read_chrome_trace() collects the records and orders them by seq.
//
// Tested by tests/engine/trace/chrome_trace_test.cpp.
#pragma once

#include <string>
#include <vector>

#include "kvscope/engine_event.h"
#include "kvscope/result.h"

namespace kvscope {

// A JSON object {"traceEvents": [...], "displayTimeUnit": "ms", ...}.
std::string to_chrome_trace_json(const std::vector<EngineEvent>& events);

// Writes to_chrome_trace_json(events) to path (replacing it).
Status write_chrome_trace(const std::vector<EngineEvent>& events, const std::string& path);

// The events of a trace written by write_chrome_trace(), in their original
// order. Errors name the file and what is wrong (not JSON, not a Chrome trace,
// no kvscope events, a malformed record).
Result<std::vector<EngineEvent>> read_chrome_trace(const std::string& path);
// Same, from the JSON text itself; source names it in error messages.
Result<std::vector<EngineEvent>> parse_chrome_trace(const std::string& json_text,
                                                    const std::string& source = "trace");

}  // namespace kvscope
