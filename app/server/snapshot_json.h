// GET /v1/engine/snapshot: the engine's state after its last step
// (EngineSnapshot) as JSON for tools: queues, every sequence with its block
// table, KV counters, the last step, and one character per physical block
// ('U' used, 'S' used and shared, 'C' cached-free, '.' free).
#pragma once

#include <nlohmann/json.hpp>

#include "kvscope/engine_snapshot.h"

namespace kvscope::server {

nlohmann::ordered_json snapshot_json(const EngineSnapshot& snapshot);

}  // namespace kvscope::server
