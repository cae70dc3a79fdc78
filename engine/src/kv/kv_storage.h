// KvStorage: the K and V tensors of every layer, as a pool of physical blocks
// of block_size token slots. Slot s of a layer holds num_kv_heads * head_dim
// elements of the cache type (kernels/cpu/kv_cache_type.h) at byte offset
// s * row_bytes(). Which slot belongs to whom is BlockPool's and
// BlockTable's business; this class only holds the numbers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/paged_attention.h"

namespace kvscope {

class KvStorage {
 public:
  // Throws std::bad_alloc when the memory cannot be reserved.
  KvStorage(int32_t num_layers, int32_t num_blocks, int32_t block_size, int32_t kv_size,
            KvCacheType type = KvCacheType::F32);

  // Bytes one block takes over all layers (K and V).
  static size_t bytes_per_block(int32_t num_layers, int32_t block_size, int32_t kv_size,
                                KvCacheType type = KvCacheType::F32);

  int32_t num_layers() const { return static_cast<int32_t>(k_.size()); }
  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t kv_size() const { return kv_size_; }
  KvCacheType type() const { return type_; }
  size_t row_bytes() const { return row_bytes_; }  // one slot of one layer, K or V
  size_t num_bytes() const;

  // Stores one token's K and V rows (kv_size floats each) into `slot` of `layer`, converted to type().
  void store(int32_t layer, int64_t slot, const float* k_row, const float* v_row);
  // The bytes of a slot, as stored.
  const uint8_t* k(int32_t layer, int64_t slot) const { return k_[static_cast<size_t>(layer)].get() + slot * row_bytes_; }
  const uint8_t* v(int32_t layer, int64_t slot) const { return v_[static_cast<size_t>(layer)].get() + slot * row_bytes_; }
  PagedKvLayer layer_view(int32_t layer) const;
  // The K rows of a block's block_size() slots of `layer`, writable (a
  // context shift re-rotates them in place).
  uint8_t* k_block(int32_t layer, int32_t block) {
    return k_[static_cast<size_t>(layer)].get() + static_cast<size_t>(block) * block_bytes();
  }

  // Copies block `src` of `from` into block `dst` of `to`, every layer, K and V
  // (copy-on-write within one storage; swap between device and host storage).
  // Precondition: both storages have the same shape.
  static void copy_block(const KvStorage& from, int32_t src, KvStorage& to, int32_t dst);

 private:
  struct Free {
    size_t bytes = 0;  // what was reserved
    void operator()(uint8_t* p) const;
  };
  using Buffer = std::unique_ptr<uint8_t[], Free>;

  size_t block_bytes() const { return static_cast<size_t>(block_size_) * row_bytes_; }

  int32_t num_blocks_, block_size_, kv_size_;
  KvCacheType type_;
  size_t row_bytes_;
  // [num_layers] buffers of [num_blocks * block_size] rows of row_bytes_,
  // from reserve_lazy_huge_pages: the pages are mapped (zeroed, 2 MiB at a
  // time where THP allows) only when first written, so a large budget costs
  // nothing until it is used. Attention never reads an unwritten slot.
  std::vector<Buffer> k_, v_;
};

}  // namespace kvscope
