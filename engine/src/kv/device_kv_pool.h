// DeviceKvPool: a KV pool in GPU memory (the CUDA backend's), one cudaMalloc
// for every layer's K and V, and the host swap space in pinned memory. The
// byte layout of a layer's K (or V) is KvStorage's: slot s at
// s * kv_row_bytes(type, kv_size), a block being block_size consecutive slots,
// so a block means the same bytes on the host and on the device
// (kernels/cuda/kv_write.cuh writes them, kernels/cuda/paged_prefill.cuh reads
// them). Compiled only with KVSCOPE_CUDA=ON.
//
// Device layout: [num_layers][K, V][num_blocks * block_size slots]; the swap
// space the same with num_swap_blocks. Every copy runs on the legacy default
// stream, the one the CUDA backend launches on, so a block copied or swapped
// in between two steps is in place before the next step's kernels read it.
//   tested by tests/engine/runtime/cuda_backend_test.cpp (label gpu)
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "kv/kv_block_store.h"
#include "kvscope/result.h"
#include "model/model_weights.h"

namespace kvscope {

class DeviceKvPool final : public KvBlockStore {
 public:
  // Device memory for `spec`'s pool and pinned host memory for its swap
  // blocks; the error says how much could not be had and which setting to
  // lower. rope: the model whose keys the pool holds (as HostKvPool's);
  // nullptr: rerotate_keys() is refused.
  static Result<std::unique_ptr<DeviceKvPool>> create(const KvPoolSpec& spec,
                                                      std::shared_ptr<const ModelWeights> rope = nullptr);
  ~DeviceKvPool() override;
  DeviceKvPool(const DeviceKvPool&) = delete;
  DeviceKvPool& operator=(const DeviceKvPool&) = delete;

  const KvPoolSpec& spec() const { return spec_; }
  int64_t num_slots() const { return static_cast<int64_t>(spec_.num_blocks) * spec_.block_size; }
  // Device pointers to layer's K and V slots, and the attention kernels' view of them.
  uint8_t* k_layer(int32_t layer) const { return base_ + (2 * static_cast<size_t>(layer)) * layer_bytes_; }
  uint8_t* v_layer(int32_t layer) const { return k_layer(layer) + layer_bytes_; }
  PagedKvLayer layer_view(int32_t layer) const {
    return PagedKvLayer{k_layer(layer), v_layer(layer), spec_.block_size, spec_.type};
  }

  int32_t num_blocks() const override { return spec_.num_blocks; }
  int32_t num_swap_blocks() const override { return spec_.num_swap_blocks; }
  size_t pool_bytes() const override { return 2 * layer_bytes_ * static_cast<size_t>(spec_.num_layers); }
  size_t swap_bytes() const override;
  void copy_block(int32_t src, int32_t dst) override;
  void swap_out_block(int32_t block, int32_t swap_block) override;
  void swap_in_block(int32_t swap_block, int32_t block) override;
  // There is no CUDA re-rotation kernel: the block's K rows of every layer
  // are copied to the host, turned by the CPU kernel (kernels/cpu/
  // kv_rerotate.h, the CPU backend's own arithmetic) and copied back. A
  // context shift moves a few blocks, so the round trip is small beside a step.
  void rerotate_keys(int32_t block, int32_t num_rows, int32_t delta) override;

 private:
  DeviceKvPool(const KvPoolSpec& spec, std::shared_ptr<const ModelWeights> rope);
  size_t block_bytes() const;
  size_t swap_layer_bytes() const { return block_bytes() * static_cast<size_t>(spec_.num_swap_blocks); }
  uint8_t* swap_k_layer(int32_t layer) const { return swap_ + (2 * static_cast<size_t>(layer)) * swap_layer_bytes(); }

  KvPoolSpec spec_;
  std::shared_ptr<const ModelWeights> rope_;
  size_t row_bytes_ = 0;    // one slot of one layer, K or V
  size_t layer_bytes_ = 0;  // one layer's K (or V): num_blocks * block_size rows
  uint8_t* base_ = nullptr;  // device
  uint8_t* swap_ = nullptr;  // pinned host, null without swap blocks
  std::vector<uint8_t> rerotate_rows_;  // host staging for rerotate_keys
};

}  // namespace kvscope
