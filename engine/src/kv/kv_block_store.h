// KvBlockStore: what the KV cache manager and a context shift do to the
// contents of KV blocks, wherever those contents live: host memory for the
// CPU backend (kv/host_kv_pool.h), device memory for a GPU one. Block ids are
// BlockPool's (pool blocks) and the manager's swap pool's (swap blocks); this
// interface moves bytes and knows nothing of tables, hashes or sequences
// (metadata apart from storage, CONVENTIONS.md habit 4).
//
// A backend makes stores (runtime/backend.h, Backend::make_kv_pool); the
// engine hands the manager a reference. Every method is required.
//   tested by tests/engine/runtime/backend_seam_test.cpp (a counting store)
//   and tests/engine/kv/ (the host store under the manager)
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/kv_cache_type.h"

namespace kvscope {

// The shape of a KV pool a backend is asked to make.
struct KvPoolSpec {
  // The storage layers and the K (or V) elements of one slot of one layer:
  // the model's layers and num_kv_heads * head_dim, or under tensor
  // parallelism one layer per (layer, KV head slot) of head_dim
  // (parallel/shard_plan.h, kv_storage_shape).
  int32_t num_layers = 0;
  int32_t kv_size = 0;
  int32_t num_blocks = 0;       // pool blocks
  int32_t block_size = 16;      // token slots per block
  int32_t num_swap_blocks = 0;  // host swap blocks (preemption = swap), 0: none
  KvCacheType type = KvCacheType::F32;
};

class KvBlockStore {
 public:
  virtual ~KvBlockStore() = default;

  // Blocks of the pool and of the host swap space (what the spec asked for).
  virtual int32_t num_blocks() const = 0;
  virtual int32_t num_swap_blocks() const = 0;
  // Bytes of the pool as allocated, and of the host swap space.
  virtual size_t pool_bytes() const = 0;
  virtual size_t swap_bytes() const = 0;

  // Copies pool block `src` into pool block `dst`, every layer, K and V
  // (copy-on-write; a context shift's copy of a shared block).
  // Precondition: src != dst, both < num_blocks().
  virtual void copy_block(int32_t src, int32_t dst) = 0;
  // Copies pool block `block` into swap block `swap_block` (preemption by
  // swap). Precondition: num_swap_blocks() > swap_block.
  virtual void swap_out_block(int32_t block, int32_t swap_block) = 0;
  // Copies swap block `swap_block` back into pool block `block`.
  virtual void swap_in_block(int32_t swap_block, int32_t block) = 0;
  // Turns the keys of the first num_rows slots of pool block `block`, every
  // layer, by delta positions (a context shift moves the block towards the
  // start: delta < 0); values are not touched. Each layer uses its own rope
  // base; a store without a model's rope (a test's) must not be asked.
  virtual void rerotate_keys(int32_t block, int32_t num_rows, int32_t delta) = 0;
};

}  // namespace kvscope
