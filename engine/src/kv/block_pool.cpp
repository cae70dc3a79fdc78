#include "kv/block_pool.h"

#include <cassert>

namespace kvscope {

BlockPool::BlockPool(int32_t num_blocks)
    : ref_counts_(idx(num_blocks), 0), fills_(idx(num_blocks), 0), hashes_(idx(num_blocks), 0),
      prev_(idx(num_blocks), -1), next_(idx(num_blocks), -1) {
  assert(num_blocks >= 0);
  for (int32_t b = 0; b < num_blocks; ++b) push_tail(b);
}

void BlockPool::unlink(int32_t b) {
  const int32_t p = prev_[idx(b)], n = next_[idx(b)];
  (p >= 0 ? next_[idx(p)] : head_) = n;
  (n >= 0 ? prev_[idx(n)] : tail_) = p;
  prev_[idx(b)] = next_[idx(b)] = -1;
  --num_free_;
  if (hashes_[idx(b)] != 0) --num_cached_free_;
}

void BlockPool::push_tail(int32_t b) {
  prev_[idx(b)] = tail_;
  next_[idx(b)] = -1;
  (tail_ >= 0 ? next_[idx(tail_)] : head_) = b;
  tail_ = b;
  ++num_free_;
  if (hashes_[idx(b)] != 0) ++num_cached_free_;
}

void BlockPool::drop_hash(int32_t b) {
  const uint64_t h = hashes_[idx(b)];
  if (h == 0) return;
  auto it = by_hash_.find(h);
  if (it != by_hash_.end() && it->second == b) by_hash_.erase(it);
  hashes_[idx(b)] = 0;
}

int32_t BlockPool::allocate() {
  assert(can_allocate(1) && "allocate: no free block");
  const int32_t b = head_;
  unlink(b);
  if (hashes_[idx(b)] != 0) {
    drop_hash(b);
    ++num_evictions_;
  }
  ref_counts_[idx(b)] = 1;
  fills_[idx(b)] = 0;
  return b;
}

std::vector<int32_t> BlockPool::allocate_contiguous(int32_t num) {
  assert(num > 0);
  int32_t run = 0;
  for (int32_t b = 0; b < num_blocks(); ++b) {
    run = ref_counts_[idx(b)] == 0 ? run + 1 : 0;
    if (run == num) {
      std::vector<int32_t> out;
      for (int32_t i = b - num + 1; i <= b; ++i) {
        unlink(i);
        if (hashes_[idx(i)] != 0) {
          drop_hash(i);
          ++num_evictions_;
        }
        ref_counts_[idx(i)] = 1;
        fills_[idx(i)] = 0;
        out.push_back(i);
      }
      return out;
    }
  }
  return {};
}

void BlockPool::retain(int32_t b) {
  assert(b >= 0 && b < num_blocks());
  assert(ref_counts_[idx(b)] > 0 && "retain: block is free");
  ++ref_counts_[idx(b)];
}

void BlockPool::release(int32_t b) {
  assert(b >= 0 && b < num_blocks());
  assert(ref_counts_[idx(b)] > 0 && "release: block is already free");
  if (--ref_counts_[idx(b)] == 0) {
    if (hashes_[idx(b)] == 0) fills_[idx(b)] = 0;  // an unhashed block's contents are dead
    push_tail(b);
  }
}

int32_t BlockPool::find(uint64_t hash) const {
  const auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? -1 : it->second;
}

void BlockPool::acquire_cached(int32_t b) {
  assert(has_hash(b) && "acquire_cached: block carries no prefix hash");
  if (ref_counts_[idx(b)] == 0) unlink(b);
  ++ref_counts_[idx(b)];
}

void BlockPool::register_hash(int32_t b, uint64_t hash) {
  assert(ref_counts_[idx(b)] > 0 && hash != 0 && !has_hash(b));
  if (by_hash_.count(hash) != 0) return;  // an equal block is already findable
  by_hash_.emplace(hash, b);
  hashes_[idx(b)] = hash;
}

void BlockPool::forget_hash(int32_t b) {
  assert(ref_counts_[idx(b)] == 1 && "forget_hash: the block is shared or free");
  drop_hash(b);
}

bool BlockPool::check_invariants() const {
  int32_t free_seen = 0, cached_seen = 0;
  int32_t prev = -1;
  for (int32_t b = head_; b >= 0; b = next_[idx(b)]) {
    if (ref_counts_[idx(b)] != 0 || prev_[idx(b)] != prev) return false;
    ++free_seen;
    cached_seen += hashes_[idx(b)] != 0;
    prev = b;
    if (free_seen > num_blocks()) return false;  // a cycle
  }
  if (prev != tail_ || free_seen != num_free_ || cached_seen != num_cached_free_) return false;
  int32_t zero_refs = 0;
  for (int32_t b = 0; b < num_blocks(); ++b) {
    if (ref_counts_[idx(b)] < 0) return false;
    zero_refs += ref_counts_[idx(b)] == 0;
    if (hashes_[idx(b)] != 0) {
      const auto it = by_hash_.find(hashes_[idx(b)]);
      if (it == by_hash_.end() || it->second != b) return false;
    }
  }
  for (const auto& [h, b] : by_hash_) {
    if (hashes_[idx(b)] != h) return false;
  }
  return zero_refs == num_free_;
}

}  // namespace kvscope
