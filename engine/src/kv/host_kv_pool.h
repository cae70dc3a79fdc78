// HostKvPool: a KV pool in host memory (the CPU backend's): the pool's
// KvStorage, the host swap space as a second KvStorage of the same shape, and
// the model's rope for re-rotating keys after a context shift. The CPU model
// runner reads and writes storage() directly; the KV cache manager and
// context shift go through the KvBlockStore operations.
//   tested by tests/engine/kv/ (under the manager) and
//   tests/engine/runtime/context_overflow_test.cpp (re-rotation)
#pragma once

#include <memory>

#include "kv/kv_block_store.h"
#include "kv/kv_storage.h"
#include "model/model_weights.h"

namespace kvscope {

class HostKvPool final : public KvBlockStore {
 public:
  // Throws std::bad_alloc when the memory cannot be reserved. rope: the
  // model whose keys the pool holds (its layer count divides spec.num_layers,
  // its head_dim divides spec.kv_size); nullptr: rerotate_keys() is refused.
  explicit HostKvPool(const KvPoolSpec& spec, std::shared_ptr<const ModelWeights> rope = nullptr);

  KvStorage& storage() { return storage_; }
  const KvStorage& storage() const { return storage_; }

  int32_t num_blocks() const override { return storage_.num_blocks(); }
  int32_t num_swap_blocks() const override { return swap_ ? swap_->num_blocks() : 0; }
  size_t pool_bytes() const override { return storage_.num_bytes(); }
  size_t swap_bytes() const override { return swap_ ? swap_->num_bytes() : 0; }
  void copy_block(int32_t src, int32_t dst) override;
  void swap_out_block(int32_t block, int32_t swap_block) override;
  void swap_in_block(int32_t swap_block, int32_t block) override;
  void rerotate_keys(int32_t block, int32_t num_rows, int32_t delta) override;

 private:
  KvStorage storage_;
  std::unique_ptr<KvStorage> swap_;  // null without swap blocks
  std::shared_ptr<const ModelWeights> rope_;
};

}  // namespace kvscope
