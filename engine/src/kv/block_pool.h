// BlockPool: the metadata of the physical KV blocks — reference counts and the
// free list. CPU-only and separate from the K/V storage (kv_storage.h), so it is
// testable without running a model. Every mutator asserts its precondition.
//
// Free order: a released block goes to the tail, allocation takes the head, so
// the least recently freed block is reused first (the order prefix caching
// needs to keep recently used prefixes findable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace kvscope {

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_free_blocks() const { return static_cast<int32_t>(free_list_.size()); }
  int32_t num_used_blocks() const { return num_blocks() - num_free_blocks(); }

  bool can_allocate(int32_t num) const { return num <= num_free_blocks(); }
  // Takes the head of the free list with reference count 1. Precondition: can_allocate(1).
  int32_t allocate();
  // One more holder of a used block. Precondition: ref_count(block) > 0.
  void retain(int32_t block);
  // One holder fewer; at zero the block goes to the tail of the free list.
  // Precondition: ref_count(block) > 0.
  void release(int32_t block);

  int32_t ref_count(int32_t block) const { return ref_counts_[static_cast<size_t>(block)]; }

 private:
  std::vector<int32_t> ref_counts_;  // [num_blocks]
  std::deque<int32_t> free_list_;    // head: next to allocate
};

}  // namespace kvscope
