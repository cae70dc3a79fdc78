#include "kv/kv_storage.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/cpu/huge_pages.h"

namespace kvscope {

KvStorage::KvStorage(int32_t num_layers, int32_t num_blocks, int32_t block_size, int32_t kv_size,
                     KvCacheType type)
    : num_blocks_(num_blocks), block_size_(block_size), kv_size_(kv_size), type_(type),
      row_bytes_(kv_row_bytes(type, kv_size)) {
  const size_t per_layer = static_cast<size_t>(num_blocks) * block_size * row_bytes_;
  auto allocate = [per_layer] {
    Buffer b(static_cast<uint8_t*>(reserve_lazy_huge_pages(per_layer)), Free{per_layer});
    if (!b && per_layer > 0) throw std::bad_alloc();
    return b;
  };
  for (int32_t l = 0; l < num_layers; ++l) {
    k_.push_back(allocate());
    v_.push_back(allocate());
  }
}

void KvStorage::Free::operator()(uint8_t* p) const { release_lazy_huge_pages(p, bytes); }

size_t KvStorage::bytes_per_block(int32_t num_layers, int32_t block_size, int32_t kv_size, KvCacheType type) {
  return 2 * kv_row_bytes(type, kv_size) * static_cast<size_t>(num_layers) * block_size;
}

size_t KvStorage::num_bytes() const {
  return bytes_per_block(static_cast<int32_t>(k_.size()), block_size_, kv_size_, type_) * num_blocks_;
}

void KvStorage::store(int32_t layer, int64_t slot, const float* k_row, const float* v_row) {
  const size_t at = static_cast<size_t>(slot) * row_bytes_;
  store_kv_row(type_, k_row, kv_size_, k_[static_cast<size_t>(layer)].get() + at);
  store_kv_row(type_, v_row, kv_size_, v_[static_cast<size_t>(layer)].get() + at);
}

void KvStorage::copy_block(const KvStorage& from, int32_t src, KvStorage& to, int32_t dst) {
  assert(from.block_size_ == to.block_size_ && from.kv_size_ == to.kv_size_ && from.type_ == to.type_ &&
         from.k_.size() == to.k_.size());
  const size_t n = from.block_bytes();
  for (size_t l = 0; l < from.k_.size(); ++l) {
    std::memcpy(to.k_[l].get() + static_cast<size_t>(dst) * n, from.k_[l].get() + static_cast<size_t>(src) * n, n);
    std::memcpy(to.v_[l].get() + static_cast<size_t>(dst) * n, from.v_[l].get() + static_cast<size_t>(src) * n, n);
  }
}

PagedKvLayer KvStorage::layer_view(int32_t layer) const {
  return PagedKvLayer{k_[static_cast<size_t>(layer)].get(), v_[static_cast<size_t>(layer)].get(), block_size_,
                      type_};
}

}  // namespace kvscope
