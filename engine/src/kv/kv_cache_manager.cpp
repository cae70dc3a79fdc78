#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <cassert>

#include "kv/prefix_hash.h"

namespace kvscope {

KvCacheManager::KvCacheManager(const KvCacheConfig& config, KvBlockStore& blocks, EventLog& events)
    : config_(config), blocks_(blocks), events_(events), pool_(config.num_blocks),
      block_tokens_(static_cast<size_t>(config.num_blocks) * config.block_size, -1),
      swap_pool_(config.num_swap_blocks) {
  assert(blocks.num_blocks() >= config.num_blocks && blocks.num_swap_blocks() >= config.num_swap_blocks &&
         "KvCacheManager: the block store is smaller than the config");
}

bool KvCacheManager::tokens_match(int32_t block, std::span<const int32_t> tokens) const {
  const int32_t* stored = block_tokens_.data() + static_cast<size_t>(block) * config_.block_size;
  return std::equal(tokens.begin(), tokens.end(), stored);
}

int32_t KvCacheManager::num_cached_prefix_tokens(std::span<const int32_t> tokens, uint64_t seed) const {
  if (!config_.prefix_caching || config_.contiguous) return 0;
  const int32_t bs = config_.block_size;
  const int32_t usable = static_cast<int32_t>(tokens.size()) - 1;  // never the last token
  uint64_t parent = seed;
  int32_t covered = 0;
  while (covered + bs <= usable) {
    const std::span<const int32_t> chunk = tokens.subspan(static_cast<size_t>(covered), static_cast<size_t>(bs));
    parent = prefix_hash(parent, chunk);
    const int32_t b = pool_.find(parent);
    if (b < 0 || !tokens_match(b, chunk)) break;
    covered += bs;
  }
  return covered;
}

int32_t KvCacheManager::acquire_cached_prefix(BlockTable& table, std::span<const int32_t> tokens, uint64_t seed,
                                              RequestId id) {
  assert(table.num_blocks() == 0 && "acquire_cached_prefix: table is not empty");
  const int32_t covered = num_cached_prefix_tokens(tokens, seed);
  if (config_.prefix_caching && !config_.contiguous) {
    num_prefix_queried_ += static_cast<int64_t>(tokens.size());
    num_prefix_hits_ += covered;
  }
  uint64_t parent = seed;
  for (int32_t pos = 0; pos < covered; pos += config_.block_size) {
    parent = prefix_hash(parent, tokens.subspan(static_cast<size_t>(pos), static_cast<size_t>(config_.block_size)));
    const int32_t b = pool_.find(parent);
    pool_.acquire_cached(b);
    table.append(b);
    table.push_hash(parent);
  }
  if (covered > 0) events_.record(EngineEventType::CacheHit, id, 0, covered);
  return covered;
}

int32_t KvCacheManager::num_blocks_to_write(const BlockTable& table, int32_t first_write, int32_t num_tokens) const {
  int32_t shared = 0;
  const int32_t bs = config_.block_size;
  const int32_t last = std::min(table.num_blocks(), (num_tokens + bs - 1) / bs);
  for (int32_t i = first_write / bs; i < last; ++i) shared += pool_.ref_count(table.block(i)) > 1;
  return table.num_blocks_needed(num_tokens) + shared;
}

void KvCacheManager::prepare_write(BlockTable& table, int32_t first_write, int32_t num_tokens, RequestId id,
                                   int32_t index) {
  assert(can_write(table, first_write, num_tokens) && "prepare_write: not enough free blocks");
  const int32_t bs = config_.block_size;
  const int32_t existing = table.num_blocks();
  const int64_t evictions_before = pool_.num_evictions();  // copy-on-write and growth both allocate
  for (int32_t i = first_write / bs; i < std::min(existing, (num_tokens + bs - 1) / bs); ++i) {
    const int32_t old = table.block(i);
    if (pool_.ref_count(old) == 1) continue;
    const int32_t fresh = pool_.allocate();
    blocks_.copy_block(old, fresh);
    if (draft_blocks_) draft_blocks_->copy_block(old, fresh);
    pool_.set_fill(fresh, pool_.fill(old));
    pool_.release(old);
    table.replace(i, fresh);
    ++num_cows_;
    events_.record(EngineEventType::CopyOnWrite, id, index, old, fresh);
  }
  const int32_t added = table.num_blocks_needed(num_tokens);
  table.grow(pool_, num_tokens);
  if (added > 0) events_.record(EngineEventType::Allocate, id, index, added);
  if (pool_.num_evictions() > evictions_before) {
    events_.record(EngineEventType::Evict, id, index, pool_.num_evictions() - evictions_before);
  }
}

bool KvCacheManager::reserve_contiguous(BlockTable& table, int32_t num_tokens) {
  assert(table.num_blocks() == 0 && "reserve_contiguous: table is not empty");
  const int32_t need = table.num_blocks_needed(num_tokens);
  if (need == 0) return true;
  std::vector<int32_t> run = pool_.allocate_contiguous(need);
  if (run.empty()) return false;
  for (int32_t b : run) table.append(b);
  return true;
}

void KvCacheManager::commit(BlockTable& table, std::span<const int32_t> tokens, int32_t first_computed,
                            int32_t num_computed, uint64_t seed) {
  const int32_t bs = config_.block_size;
  for (int32_t i = first_computed / bs; i * bs < num_computed; ++i) {
    pool_.set_fill(table.block(i), std::min(bs, num_computed - i * bs));
  }
  for (int32_t i = table.num_hashed(); (i + 1) * bs <= num_computed; ++i) {
    const std::span<const int32_t> chunk = tokens.subspan(static_cast<size_t>(i) * bs, static_cast<size_t>(bs));
    const uint64_t h = prefix_hash(i == 0 ? seed : table.hash(i - 1), chunk);
    table.push_hash(h);
    const int32_t b = table.block(i);
    if (config_.prefix_caching && !config_.contiguous && !pool_.has_hash(b) && pool_.find(h) < 0) {
      pool_.register_hash(b, h);
      std::copy(chunk.begin(), chunk.end(), block_tokens_.begin() + static_cast<ptrdiff_t>(b) * bs);
    }
  }
}

int32_t KvCacheManager::truncate(BlockTable& table, int32_t num_tokens) {
  if (config_.contiguous) return 0;
  const int32_t keep = (num_tokens + config_.block_size - 1) / config_.block_size;
  assert(keep >= table.num_hashed() && "truncate: would drop a committed, hashed block");
  int32_t released = 0;
  while (table.num_blocks() > keep) {
    const int32_t b = table.block(table.num_blocks() - 1);
    assert(pool_.ref_count(b) == 1 && !pool_.has_hash(b) &&
           "truncate: a rolled-back block must be this table's alone and unhashed");
    (void)b;
    table.release_last(pool_);
    ++released;
  }
  return released;
}

bool KvCacheManager::drop_blocks(BlockTable& table, int32_t first, int32_t num, int32_t num_tokens, RequestId id,
                                 int32_t index) {
  assert(first >= 0 && num > 0 && first + num <= table.num_blocks() && "drop_blocks: out of the table");
  int32_t num_copies = 0, num_freed = 0;
  for (int32_t i = first; i < first + num; ++i) num_freed += pool_.ref_count(table.block(i)) == 1;
  for (int32_t i = first + num; i < table.num_blocks(); ++i) num_copies += pool_.ref_count(table.block(i)) > 1;
  if (num_copies > pool_.num_free_blocks() + num_freed) return false;
  table.drop_range(pool_, first, num);
  for (int32_t i = first; i < table.num_blocks(); ++i) {
    const int32_t old = table.block(i);
    if (pool_.ref_count(old) == 1) {
      pool_.forget_hash(old);
      continue;
    }
    // Another sequence reads this block at its old positions: rotate a copy.
    const int32_t fresh = pool_.allocate();
    blocks_.copy_block(old, fresh);
    if (draft_blocks_) draft_blocks_->copy_block(old, fresh);
    pool_.set_fill(fresh, pool_.fill(old));
    pool_.release(old);
    table.replace(i, fresh);
    ++num_cows_;
    events_.record(EngineEventType::CopyOnWrite, id, index, old, fresh);
  }
  // Hashes for the moved full blocks from a chain salted by this shift: the
  // next commit() continues from them instead of re-hashing the moved blocks
  // as if they were a fresh prefill of their tokens.
  ++num_shifts_;
  const int32_t salt[] = {static_cast<int32_t>(id), static_cast<int32_t>(id >> 32), index,
                          static_cast<int32_t>(num_shifts_), static_cast<int32_t>(num_shifts_ >> 32)};
  for (int32_t i = table.num_hashed(); i < table.num_blocks() && (i + 1) * config_.block_size <= num_tokens; ++i) {
    const uint64_t parent = i == 0 ? prefix_hash_seed("context shift") : table.hash(i - 1);
    table.push_hash(prefix_hash(parent ^ static_cast<uint64_t>(i), salt));
  }
  return true;
}

void KvCacheManager::fork(const BlockTable& parent, BlockTable& child) {
  assert(child.num_blocks() == 0);
  for (int32_t i = 0; i < parent.num_blocks(); ++i) {
    pool_.retain(parent.block(i));
    child.append(parent.block(i));
  }
  for (int32_t i = 0; i < parent.num_hashed(); ++i) child.push_hash(parent.hash(i));
}

void KvCacheManager::release(BlockTable& table) { table.release_all(pool_); }

void KvCacheManager::swap_out(BlockTable& table, RequestId id, int32_t index) {
  assert(can_swap_out(table));
  std::vector<int32_t> host;
  for (int32_t b : table.blocks()) {
    const int32_t s = swap_pool_.allocate();
    blocks_.swap_out_block(b, s);
    swap_pool_.set_fill(s, pool_.fill(b));
    pool_.release(b);
    host.push_back(s);
  }
  num_swapped_out_ += static_cast<int64_t>(host.size());
  events_.record(EngineEventType::SwapOut, id, index, static_cast<int64_t>(host.size()));
  table.set_blocks(std::move(host));
}

void KvCacheManager::swap_in(BlockTable& table, RequestId id, int32_t index) {
  assert(can_swap_in(table) && config_.num_swap_blocks > 0);
  std::vector<int32_t> device;
  for (int32_t s : table.blocks()) {
    const int32_t b = pool_.allocate();
    blocks_.swap_in_block(s, b);
    pool_.set_fill(b, swap_pool_.fill(s));
    swap_pool_.release(s);
    device.push_back(b);
  }
  num_swapped_in_ += static_cast<int64_t>(device.size());
  events_.record(EngineEventType::SwapIn, id, index, static_cast<int64_t>(device.size()));
  table.set_blocks(std::move(device));
}

void KvCacheManager::release_swapped(BlockTable& table) { table.release_all(swap_pool_); }

KvStats KvCacheManager::stats() const {
  KvStats s;
  s.num_blocks = pool_.num_blocks();
  s.num_used_blocks = pool_.num_used_blocks();
  s.num_cached_free_blocks = pool_.num_cached_free_blocks();
  s.num_free_blocks = pool_.num_free_blocks();
  s.num_swap_blocks = swap_pool_.num_blocks();
  s.num_used_swap_blocks = swap_pool_.num_used_blocks();
  s.num_prefix_queried_tokens = num_prefix_queried_;
  s.num_prefix_hit_tokens = num_prefix_hits_;
  s.num_evictions = pool_.num_evictions();
  s.num_copy_on_writes = num_cows_;
  s.num_swapped_out_blocks = num_swapped_out_;
  s.num_swapped_in_blocks = num_swapped_in_;
  for (int32_t b = 0; b < pool_.num_blocks(); ++b) {
    if (pool_.ref_count(b) == 0) continue;
    s.num_reserved_slots += config_.block_size;
    s.num_written_slots += pool_.fill(b);
  }
  return s;
}

}  // namespace kvscope
