// BlockTable: one sequence's map from logical blocks (position / block_size)
// to physical block ids, and how many token slots it covers.
#pragma once

#include <cstdint>
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

  // Blocks to allocate so that the table covers num_tokens slots.
  int32_t num_blocks_needed(int32_t num_tokens) const;
  // Grows the table to cover num_tokens slots. Precondition:
  // pool.can_allocate(num_blocks_needed(num_tokens)).
  void grow(BlockPool& pool, int32_t num_tokens);
  // Releases every block back to the pool and empties the table.
  void release_all(BlockPool& pool);

  // The KV slot (block * block_size + offset) of a position. Precondition: pos < capacity().
  int64_t slot(int32_t pos) const;

 private:
  int32_t block_size_;
  std::vector<int32_t> blocks_;  // [num_blocks] physical ids in logical order
};

}  // namespace kvscope
