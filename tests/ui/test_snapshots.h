// Hand-made EngineSnapshots for the UI tests: a pool of num_blocks blocks and
// num_seqs running sequences whose first `shared_blocks` blocks are shared.
#pragma once

#include <cstdint>
#include <memory>

#include "kvscope/engine_snapshot.h"

namespace kvscope::test {

// Sequence i has id 100 + i and blocks_per_seq blocks; the first
// shared_blocks of them are the same physical blocks for every sequence
// (ref_count = num_seqs, full, hashed). Its last block is half full.
// Block num_blocks - 1 is cached-free (ref 0, hashed); the rest are free.
std::shared_ptr<const EngineSnapshot> makeSnapshot(int num_seqs, int blocks_per_seq, int shared_blocks,
                                                   int num_blocks = 64, int block_size = 16);

// K and V bytes per token of SmolLM2-135M (30 layers x 3 KV heads x 64 x 2 x 4 B).
inline constexpr int64_t kSmolKvBytesPerToken = 46080;

// makeSnapshot's, after a step in which cascade attention read the shared
// blocks [0, shared_blocks) once for all num_seqs sequences: one
// CascadeGroupSnapshot, and last_step's cascade totals (K/V bytes at
// kSmolKvBytesPerToken) with `attention_ms` of attention.
std::shared_ptr<const EngineSnapshot> makeCascadeSnapshot(int num_seqs, int blocks_per_seq, int shared_blocks,
                                                          double attention_ms = 4.0);

// SmolLM2-135M (9 query heads over 3 KV heads) split as plan_shards splits
// it at tp = 2 (rank 0: query heads 0-2 and KV head 0; rank 1: query heads
// 3-8 and KV heads 1-2) or tp = 4 (one KV head per rank, KV head 2 copied
// on ranks 2 and 3), with `kv_pool_bytes` shared by the stored KV heads and
// each rank's activations for 512 rows.
TensorParallelMemory smolRanks(int tp, int64_t kv_pool_bytes);
// makeSnapshot's, with `tp` set as its tensor_parallel.
std::shared_ptr<const EngineSnapshot> withRanks(const std::shared_ptr<const EngineSnapshot>& snapshot,
                                                const TensorParallelMemory& tp);

}  // namespace kvscope::test
