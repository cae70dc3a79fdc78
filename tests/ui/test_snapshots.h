// Hand-made EngineSnapshots for the UI tests: a pool of num_blocks blocks and
// num_seqs running sequences whose first `shared_blocks` blocks are shared.
#pragma once

#include <memory>

#include "kvscope/engine_snapshot.h"

namespace kvscope::test {

// Sequence i has id 100 + i and blocks_per_seq blocks; the first
// shared_blocks of them are the same physical blocks for every sequence
// (ref_count = num_seqs, full, hashed). Its last block is half full.
// Block num_blocks - 1 is cached-free (ref 0, hashed); the rest are free.
std::shared_ptr<const EngineSnapshot> makeSnapshot(int num_seqs, int blocks_per_seq, int shared_blocks,
                                                   int num_blocks = 64, int block_size = 16);

}  // namespace kvscope::test
