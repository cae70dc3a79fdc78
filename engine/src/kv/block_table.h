// BlockTable: one sequence's map from logical blocks (position / block_size)
// to physical block ids, plus the prefix hashes of its leading full blocks
// (each chains its parent's, so a block's hash names its whole prefix).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kv/block_pool.h"

namespace kvscope {

class BlockTable {
 public:
  explicit BlockTable(int32_t block_size) : block_size_(block_size) {}

  int32_t block_size() const { return block_size_; }
  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t capacity() const { return num_blocks() * block_size_; }  // token slots covered
  const std::vector<int32_t>& blocks() const { return blocks_; }
  int32_t block(int32_t i) const { return blocks_[static_cast<size_t>(i)]; }

  // Blocks to allocate so that the table covers num_tokens slots.
  int32_t num_blocks_needed(int32_t num_tokens) const;
  // Grows the table to cover num_tokens slots from `pool`. Precondition:
  // pool.can_allocate(num_blocks_needed(num_tokens)).
  void grow(BlockPool& pool, int32_t num_tokens);
  void append(int32_t block) { blocks_.push_back(block); }
  // Replaces all block ids, keeping the prefix hashes (the contents moved: swap).
  void set_blocks(std::vector<int32_t> blocks) { blocks_ = std::move(blocks); }
  void replace(int32_t i, int32_t block) { blocks_[static_cast<size_t>(i)] = block; }
  // Releases every block to `pool` (last block first: a sequence's first
  // blocks, its prompt and the most likely to be shared, stay cached longest)
  // and empties the table.
  void release_all(BlockPool& pool);
  // Releases the last block to `pool` and drops it from the table (speculative
  // rollback). Precondition: num_blocks() > num_hashed(): a hashed block holds
  // a committed prefix and is never given back this way.
  void release_last(BlockPool& pool);
  // Context shift: releases blocks [first, first + num) to `pool` and closes
  // the gap (later blocks move down), keeping at most `first` prefix hashes.
  // Precondition: first + num <= num_blocks().
  void drop_range(BlockPool& pool, int32_t first, int32_t num);
  // Forgets the blocks without releasing them (they moved elsewhere: swap).
  void clear() { blocks_.clear(); hashes_.clear(); }

  // The KV slot (block * block_size + offset) of a position. Precondition: pos < capacity().
  int64_t slot(int32_t pos) const;

  // Prefix hashes of blocks [0, num_hashed()).
  int32_t num_hashed() const { return static_cast<int32_t>(hashes_.size()); }
  uint64_t hash(int32_t i) const { return hashes_[static_cast<size_t>(i)]; }
  void push_hash(uint64_t h) { hashes_.push_back(h); }

 private:
  int32_t block_size_;
  std::vector<int32_t> blocks_;   // [num_blocks] physical ids in logical order
  std::vector<uint64_t> hashes_;  // [num_hashed] prefix hashes of the leading full blocks
};

}  // namespace kvscope
