#include "kv/block_table.h"

#include <cassert>

namespace kvscope {

int32_t BlockTable::num_blocks_needed(int32_t num_tokens) const {
  const int32_t total = (num_tokens + block_size_ - 1) / block_size_;
  return total > num_blocks() ? total - num_blocks() : 0;
}

void BlockTable::grow(BlockPool& pool, int32_t num_tokens) {
  const int32_t needed = num_blocks_needed(num_tokens);
  assert(pool.can_allocate(needed) && "grow: not enough free blocks");
  for (int32_t i = 0; i < needed; ++i) blocks_.push_back(pool.allocate());
}

void BlockTable::release_all(BlockPool& pool) {
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) pool.release(*it);
  clear();
}

void BlockTable::release_last(BlockPool& pool) {
  assert(num_blocks() > num_hashed() && "release_last: the last block holds a committed, hashed prefix");
  pool.release(blocks_.back());
  blocks_.pop_back();
}

void BlockTable::drop_range(BlockPool& pool, int32_t first, int32_t num) {
  assert(first >= 0 && num >= 0 && first + num <= num_blocks() && "drop_range: out of the table");
  const auto begin = blocks_.begin() + first;
  for (auto it = begin; it != begin + num; ++it) pool.release(*it);
  blocks_.erase(begin, begin + num);
  if (num_hashed() > first) hashes_.resize(static_cast<size_t>(first));
}

int64_t BlockTable::slot(int32_t pos) const {
  assert(pos >= 0 && pos < capacity());
  return static_cast<int64_t>(blocks_[static_cast<size_t>(pos / block_size_)]) * block_size_ +
         pos % block_size_;
}

}  // namespace kvscope
