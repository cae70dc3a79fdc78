#include "kv/kv_storage.h"

namespace kvscope {

KvStorage::KvStorage(int32_t num_layers, int32_t num_blocks, int32_t block_size, int32_t kv_size)
    : num_blocks_(num_blocks), block_size_(block_size), kv_size_(kv_size) {
  const size_t per_layer = static_cast<size_t>(num_blocks) * block_size * kv_size;
  k_.assign(static_cast<size_t>(num_layers), std::vector<float>(per_layer, 0.0f));
  v_.assign(static_cast<size_t>(num_layers), std::vector<float>(per_layer, 0.0f));
}

size_t KvStorage::bytes_per_block(int32_t num_layers, int32_t block_size, int32_t kv_size) {
  return 2 * sizeof(float) * static_cast<size_t>(num_layers) * block_size * kv_size;
}

size_t KvStorage::num_bytes() const {
  return bytes_per_block(static_cast<int32_t>(k_.size()), block_size_, kv_size_) * num_blocks_;
}

PagedKvLayer KvStorage::layer_view(int32_t layer) const {
  return PagedKvLayer{k_[static_cast<size_t>(layer)].data(), v_[static_cast<size_t>(layer)].data(),
                      block_size_};
}

}  // namespace kvscope
