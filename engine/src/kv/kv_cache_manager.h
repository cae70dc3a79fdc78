// KvCacheManager: gives sequences the KV blocks they need and takes them back.
// It owns the block metadata (BlockPool, the swap pool's), the prefix cache,
// and moves block contents for copy-on-write and swap through a KvBlockStore
// (kv/kv_block_store.h: the backend's pool, host or device memory).
// Sequences are seen only through their BlockTable and token ids.
//
// Prefix caching: a full block's hash chains its parent's hash and its tokens
// (prefix_hash.h). A new sequence first takes every leading whole block whose
// hash and tokens match a cached block; a hit never covers the last prompt
// token, because that token's logits must be computed. Copy-on-write: before
// slots of a block shared with another sequence (reference count > 1, e.g.
// after fork() for parallel sampling) are written, the block is copied.
// Contiguous mode: a sequence reserves its whole maximum length at admission
// as one run of consecutive blocks, as static-batching engines do.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "kv/kv_block_store.h"
#include "kvscope/engine_snapshot.h"
#include "trace/event_log.h"

namespace kvscope {

struct KvCacheConfig {
  int32_t block_size = 16;
  int32_t num_blocks = 0;
  int32_t num_swap_blocks = 0;  // host swap space, in blocks
  bool prefix_caching = true;
  bool contiguous = false;
};

class KvCacheManager {
 public:
  // `blocks` holds the pool's contents and the host swap space (its
  // num_blocks() and num_swap_blocks() at least config's); not owned.
  KvCacheManager(const KvCacheConfig& config, KvBlockStore& blocks, EventLog& events);

  // Speculative decoding with a draft model: the draft's KV (same blocks,
  // indexed by the same block ids, docs/speculative.md), copied along on
  // copy-on-write. Not swapped: a swapped-out sequence's draft KV is
  // recomputed after it comes back. nullptr: none.
  void set_draft_blocks(KvBlockStore* draft) { draft_blocks_ = draft; }

  const KvCacheConfig& config() const { return config_; }
  const BlockPool& pool() const { return pool_; }
  int32_t block_size() const { return config_.block_size; }
  // Bytes of the host swap space (0 when num_swap_blocks is 0).
  size_t swap_bytes() const { return config_.num_swap_blocks > 0 ? blocks_.swap_bytes() : 0; }

  // Prompt tokens a new sequence would get from the cache (no state change).
  int32_t num_cached_prefix_tokens(std::span<const int32_t> tokens, uint64_t seed) const;
  // Puts the cached leading blocks of `tokens` into the empty `table`, taking a
  // reference on each. Returns the tokens they cover (a multiple of block_size).
  int32_t acquire_cached_prefix(BlockTable& table, std::span<const int32_t> tokens, uint64_t seed,
                                RequestId id);

  // Blocks to allocate so that `table` covers num_tokens slots and every block
  // holding slots [first_write, num_tokens) belongs to this table alone.
  int32_t num_blocks_to_write(const BlockTable& table, int32_t first_write, int32_t num_tokens) const;
  bool can_write(const BlockTable& table, int32_t first_write, int32_t num_tokens) const {
    return pool_.can_allocate(num_blocks_to_write(table, first_write, num_tokens));
  }
  // Does it (allocation, copy-on-write). Precondition: can_write(...).
  void prepare_write(BlockTable& table, int32_t first_write, int32_t num_tokens, RequestId id, int32_t index);
  // Contiguous mode: reserves blocks for num_tokens as one run into the empty
  // table. False (nothing changes) when no free run is long enough.
  bool reserve_contiguous(BlockTable& table, int32_t num_tokens);

  // After tokens [first_computed, num_computed) of `tokens` had their K/V
  // written: records block fill, hashes newly full blocks and makes them
  // findable (prefix caching).
  void commit(BlockTable& table, std::span<const int32_t> tokens, int32_t first_computed,
              int32_t num_computed, uint64_t seed);

  // Speculative rollback: releases the table's blocks past those that hold
  // slots [0, num_tokens), i.e. blocks that held only the K/V of rejected
  // draft tokens, so the table is what decoding token by token would have
  // left. Returns the blocks released. In contiguous mode the table keeps its
  // whole reservation (as token-by-token decoding would) and nothing is
  // released. Preconditions (asserted): every block to release is held by
  // this table alone and carries no prefix hash (prepare_write allocated it
  // for this step's rows and commit() has not hashed it), and num_tokens
  // covers every committed token (commit() before truncate()).
  int32_t truncate(BlockTable& table, int32_t num_tokens);

  // Context shift (docs/context-overflow.md): releases blocks [first, first +
  // num) of `table`, closes the gap, and makes every later block this table's
  // alone and out of the prefix cache, so its keys can be re-rotated in place:
  // a shared block (reference count > 1) is copied first, an owned one forgets
  // its prefix hash. num_tokens: the tokens whose K/V the table holds after
  // the drop. The moved full blocks get prefix hashes of a chain no prompt can
  // reach, so neither they nor blocks committed after them are ever found by
  // another sequence (their K/V saw the dropped tokens). False, with nothing
  // changed, when the copies need more blocks than there are free.
  // Precondition: first + num <= table.num_blocks(), a device table.
  bool drop_blocks(BlockTable& table, int32_t first, int32_t num, int32_t num_tokens, RequestId id, int32_t index);

  // `child` (empty) shares every block of `parent` (parallel sampling).
  void fork(const BlockTable& parent, BlockTable& child);
  // Returns the blocks of a table on the device.
  void release(BlockTable& table);

  // Swap: the table's device blocks are copied to host swap blocks and freed
  // (the table then holds swap ids), or back.
  bool can_swap_out(const BlockTable& table) const {
    return config_.num_swap_blocks > 0 && table.num_blocks() > 0 && swap_pool_.can_allocate(table.num_blocks());
  }
  void swap_out(BlockTable& table, RequestId id, int32_t index);
  bool can_swap_in(const BlockTable& table) const { return pool_.can_allocate(table.num_blocks()); }
  void swap_in(BlockTable& table, RequestId id, int32_t index);
  // Returns the swap blocks of a swapped-out table (cancelled while swapped).
  void release_swapped(BlockTable& table);

  // Counters; the slot counts are filled by the caller's walk over sequences.
  KvStats stats() const;

 private:
  bool tokens_match(int32_t block, std::span<const int32_t> tokens) const;

  KvCacheConfig config_;
  KvBlockStore& blocks_;
  KvBlockStore* draft_blocks_ = nullptr;  // not owned
  EventLog& events_;
  BlockPool pool_;
  std::vector<int32_t> block_tokens_;  // [num_blocks * block_size] tokens of hashed blocks
  BlockPool swap_pool_;
  int64_t num_prefix_queried_ = 0, num_prefix_hits_ = 0, num_cows_ = 0;
  int64_t num_swapped_out_ = 0, num_swapped_in_ = 0;
  uint64_t num_shifts_ = 0;  // drop_blocks calls: salts the unreachable hash chains
};

}  // namespace kvscope
