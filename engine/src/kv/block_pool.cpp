#include "kv/block_pool.h"

#include <cassert>

namespace kvscope {

BlockPool::BlockPool(int32_t num_blocks) : ref_counts_(static_cast<size_t>(num_blocks), 0) {
  assert(num_blocks >= 0);
  for (int32_t b = 0; b < num_blocks; ++b) free_list_.push_back(b);
}

int32_t BlockPool::allocate() {
  assert(can_allocate(1) && "allocate: no free block");
  const int32_t block = free_list_.front();
  free_list_.pop_front();
  assert(ref_counts_[static_cast<size_t>(block)] == 0);
  ref_counts_[static_cast<size_t>(block)] = 1;
  return block;
}

void BlockPool::retain(int32_t block) {
  assert(block >= 0 && block < num_blocks());
  assert(ref_counts_[static_cast<size_t>(block)] > 0 && "retain: block is free");
  ++ref_counts_[static_cast<size_t>(block)];
}

void BlockPool::release(int32_t block) {
  assert(block >= 0 && block < num_blocks());
  assert(ref_counts_[static_cast<size_t>(block)] > 0 && "release: block is already free");
  if (--ref_counts_[static_cast<size_t>(block)] == 0) free_list_.push_back(block);
}

}  // namespace kvscope
