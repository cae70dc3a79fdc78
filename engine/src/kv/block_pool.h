// BlockPool: the metadata of the physical KV blocks — reference counts, the
// free list, the prefix-hash map and how many slots of each block are written.
// CPU-only and separate from the K/V storage (kv_storage.h), so it is testable
// without a model. Every mutator asserts its precondition.
//
// Free order (LRU): a released block goes to the tail, allocation takes the
// head, so the least recently freed block is reused first. A freed block keeps
// its prefix hash ("cached-free") and stays findable until allocation reuses
// it (an eviction); a prefix hit on it takes it out of the middle of the list,
// which is why the list is intrusive (prev/next per block).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace kvscope {

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_free_blocks() const { return num_free_; }  // reference count 0, cached or not
  int32_t num_used_blocks() const { return num_blocks() - num_free_; }
  int32_t num_cached_free_blocks() const { return num_cached_free_; }
  int64_t num_evictions() const { return num_evictions_; }

  bool can_allocate(int32_t num) const { return num <= num_free_; }
  // Takes the head of the free list (dropping its prefix hash: an eviction)
  // with reference count 1 and fill 0. Precondition: can_allocate(1).
  int32_t allocate();
  // `num` blocks with consecutive ids, for contiguous (paged-off) reservations:
  // the lowest free run, or an empty vector when no run is long enough.
  std::vector<int32_t> allocate_contiguous(int32_t num);
  // One more holder of a used block. Precondition: ref_count(block) > 0.
  void retain(int32_t block);
  // One holder fewer; at zero the block goes to the tail of the free list.
  // Precondition: ref_count(block) > 0.
  void release(int32_t block);

  // Prefix cache. The block registered under `hash`, or -1.
  int32_t find(uint64_t hash) const;
  // Takes a reference on a block found by find(); a cached-free block leaves
  // the free list. Precondition: has_hash(block).
  void acquire_cached(int32_t block);
  // Registers a used, full block under `hash` unless another block already
  // holds that hash (then nothing changes). Precondition: ref_count(block) > 0,
  // hash != 0, !has_hash(block).
  void register_hash(int32_t block, uint64_t hash);
  // Drops the prefix hash of a block whose contents are about to change
  // (context shift). Precondition: ref_count(block) == 1 (the caller's alone).
  void forget_hash(int32_t block);
  bool has_hash(int32_t block) const { return hashes_[idx(block)] != 0; }
  uint64_t hash_of(int32_t block) const { return hashes_[idx(block)]; }

  int32_t ref_count(int32_t block) const { return ref_counts_[idx(block)]; }
  // Written token slots of a block (for the waste statistic and the inspector).
  int32_t fill(int32_t block) const { return fills_[idx(block)]; }
  void set_fill(int32_t block, int32_t fill) { fills_[idx(block)] = fill; }

  // Checks every internal invariant (tests and the soak test call it).
  bool check_invariants() const;

 private:
  static size_t idx(int32_t block) { return static_cast<size_t>(block); }
  void unlink(int32_t block);
  void push_tail(int32_t block);
  void drop_hash(int32_t block);

  std::vector<int32_t> ref_counts_;  // [num_blocks]
  std::vector<int32_t> fills_;       // [num_blocks]
  std::vector<uint64_t> hashes_;     // [num_blocks] prefix hash, 0: none
  std::vector<int32_t> prev_, next_; // [num_blocks] free-list links, -1: none
  int32_t head_ = -1, tail_ = -1;
  int32_t num_free_ = 0;
  int32_t num_cached_free_ = 0;
  int64_t num_evictions_ = 0;
  std::unordered_map<uint64_t, int32_t> by_hash_;
};

}  // namespace kvscope
