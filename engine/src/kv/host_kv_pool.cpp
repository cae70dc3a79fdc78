// HostKvPool; see host_kv_pool.h.
#include "kv/host_kv_pool.h"

#include <cassert>

#include "kernels/cpu/kv_rerotate.h"

namespace kvscope {

HostKvPool::HostKvPool(const KvPoolSpec& spec, std::shared_ptr<const ModelWeights> rope)
    : storage_(spec.num_layers, spec.num_blocks, spec.block_size, spec.kv_size, spec.type), rope_(std::move(rope)) {
  if (spec.num_swap_blocks > 0) {
    swap_ = std::make_unique<KvStorage>(spec.num_layers, spec.num_swap_blocks, spec.block_size, spec.kv_size,
                                        spec.type);
  }
}

void HostKvPool::copy_block(int32_t src, int32_t dst) {
  assert(src != dst && src < num_blocks() && dst < num_blocks() && "copy_block: not two distinct pool blocks");
  KvStorage::copy_block(storage_, src, storage_, dst);
}

void HostKvPool::swap_out_block(int32_t block, int32_t swap_block) {
  assert(swap_ && swap_block < swap_->num_blocks() && "swap_out_block: no such swap block");
  KvStorage::copy_block(storage_, block, *swap_, swap_block);
}

void HostKvPool::swap_in_block(int32_t swap_block, int32_t block) {
  assert(swap_ && swap_block < swap_->num_blocks() && "swap_in_block: no such swap block");
  KvStorage::copy_block(*swap_, swap_block, storage_, block);
}

void HostKvPool::rerotate_keys(int32_t block, int32_t num_rows, int32_t delta) {
  assert(rope_ && "rerotate_keys: this pool was made without the model's rope");
  const ModelConfig& model = rope_->config;
  // A plain runner stores one storage layer per model layer (all KV heads in
  // a row); tensor parallelism one per (model layer, KV head slot), in that
  // order (parallel/shard_plan.h): either way a storage layer holds
  // kv_size / head_dim heads of model layer storage_layer / per_layer.
  const int32_t per_layer = storage_.num_layers() / model.num_layers;
  const int32_t heads = storage_.kv_size() / model.head_dim;
  assert(per_layer * model.num_layers == storage_.num_layers() && heads * model.head_dim == storage_.kv_size());
  const float* factors = rope_->rope_freq_factors.empty() ? nullptr : rope_->rope_freq_factors.data();
  for (int32_t layer = 0; layer < storage_.num_layers(); ++layer) {
    rerotate_kv_rows(storage_.type(), storage_.k_block(layer, block), num_rows, heads, model.head_dim, delta,
                     model.layer_rope_base(layer / per_layer), model.rope_style, factors);
  }
}

}  // namespace kvscope
