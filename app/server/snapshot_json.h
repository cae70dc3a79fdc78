// GET /v1/engine/snapshot: the engine's state after its last step
// (EngineSnapshot) as JSON for tools: queues, every sequence with its block
// table, KV counters, the last step (with each tensor-parallel rank's
// forward time), the split over tensor-parallel ranks (`tensor_parallel`:
// each rank's heads and its weight, KV and workspace bytes; one rank at
// tp = 1), and one character per physical block ('U' used, 'S' used and
// shared, 'C' cached-free, '.' free). docs/server.md lists the keys.
#pragma once

#include <nlohmann/json.hpp>

#include "kvscope/engine_snapshot.h"

namespace kvscope::server {

nlohmann::ordered_json snapshot_json(const EngineSnapshot& snapshot);

// The split over tensor-parallel ranks as the snapshot's `tensor_parallel`
// and `kvscope-cli model-info --tp N --json` both print it: tp, the
// reduction, KV heads and slots, and per rank its heads and its weight, KV
// and workspace bytes.
nlohmann::ordered_json tensor_parallel_json(const TensorParallelMemory& m);

}  // namespace kvscope::server
