// DeviceKvPool; see device_kv_pool.h.
#include "kv/device_kv_pool.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cassert>

#include "kernels/cpu/kv_rerotate.h"
#include "runtime/device_array.h"

namespace kvscope {

DeviceKvPool::DeviceKvPool(const KvPoolSpec& spec, std::shared_ptr<const ModelWeights> rope)
    : spec_(spec), rope_(std::move(rope)), row_bytes_(kv_row_bytes(spec.type, spec.kv_size)),
      layer_bytes_(static_cast<size_t>(spec.num_blocks) * spec.block_size * row_bytes_) {}

Result<std::unique_ptr<DeviceKvPool>> DeviceKvPool::create(const KvPoolSpec& spec,
                                                           std::shared_ptr<const ModelWeights> rope) {
  assert(spec.num_layers > 0 && spec.kv_size > 0 && spec.num_blocks > 0 && spec.block_size > 0);
  std::unique_ptr<DeviceKvPool> pool(new DeviceKvPool(spec, std::move(rope)));
  const size_t bytes = pool->pool_bytes();
  if (cudaMalloc(&pool->base_, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the allocation error so it is not reported by a later launch
    pool->base_ = nullptr;
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    return Error{fmt::format("cannot allocate {} MiB of GPU memory for the KV pool ({} MiB free of {} MiB); "
                             "lower the KV budget", bytes >> 20, free_bytes >> 20, total_bytes >> 20)};
  }
  // Zeroed as the host pool is (calloc): attention never reads an unwritten
  // slot, but a pool that starts the same every time is easier to debug.
  cuda_check(cudaMemset(pool->base_, 0, bytes), "cudaMemset of the KV pool");
  if (spec.num_swap_blocks > 0) {
    const size_t swap = pool->swap_bytes();
    if (cudaMallocHost(&pool->swap_, swap) != cudaSuccess) {
      cudaGetLastError();
      pool->swap_ = nullptr;
      return Error{fmt::format("cannot pin {} MiB of host memory for the KV swap space; lower the swap space "
                               "or use preemption = recompute", swap >> 20)};
    }
  }
  return pool;
}

DeviceKvPool::~DeviceKvPool() {
  // Copies into or out of these buffers may still be queued.
  cudaStreamSynchronize(nullptr);
  cudaFree(base_);
  cudaFreeHost(swap_);
}

size_t DeviceKvPool::block_bytes() const { return static_cast<size_t>(spec_.block_size) * row_bytes_; }

size_t DeviceKvPool::swap_bytes() const { return 2 * swap_layer_bytes() * static_cast<size_t>(spec_.num_layers); }

// Each copy below moves one block of one layer's K and of its V: 2 *
// num_layers copies per block, queued on the default stream without waiting
// (pinned host memory makes the swap copies truly asynchronous; the host
// never reads the swap space itself, only swap_in_block copies it back).

void DeviceKvPool::copy_block(int32_t src, int32_t dst) {
  assert(src != dst && src < num_blocks() && dst < num_blocks() && "copy_block: not two distinct pool blocks");
  const size_t n = block_bytes();
  for (int32_t l = 0; l < spec_.num_layers; ++l) {
    for (uint8_t* layer : {k_layer(l), v_layer(l)}) {
      cuda_check(cudaMemcpyAsync(layer + dst * n, layer + src * n, n, cudaMemcpyDeviceToDevice, nullptr),
                 "copy_block");
    }
  }
}

void DeviceKvPool::swap_out_block(int32_t block, int32_t swap_block) {
  assert(swap_ && swap_block < num_swap_blocks() && block < num_blocks() && "swap_out_block: no such block");
  const size_t n = block_bytes();
  for (int32_t l = 0; l < spec_.num_layers; ++l) {
    uint8_t* host_k = swap_k_layer(l);
    uint8_t* host_v = host_k + swap_layer_bytes();
    cuda_check(cudaMemcpyAsync(host_k + swap_block * n, k_layer(l) + block * n, n, cudaMemcpyDeviceToHost, nullptr),
               "swap_out_block");
    cuda_check(cudaMemcpyAsync(host_v + swap_block * n, v_layer(l) + block * n, n, cudaMemcpyDeviceToHost, nullptr),
               "swap_out_block");
  }
}

void DeviceKvPool::swap_in_block(int32_t swap_block, int32_t block) {
  assert(swap_ && swap_block < num_swap_blocks() && block < num_blocks() && "swap_in_block: no such block");
  const size_t n = block_bytes();
  for (int32_t l = 0; l < spec_.num_layers; ++l) {
    const uint8_t* host_k = swap_k_layer(l);
    const uint8_t* host_v = host_k + swap_layer_bytes();
    cuda_check(cudaMemcpyAsync(k_layer(l) + block * n, host_k + swap_block * n, n, cudaMemcpyHostToDevice, nullptr),
               "swap_in_block");
    cuda_check(cudaMemcpyAsync(v_layer(l) + block * n, host_v + swap_block * n, n, cudaMemcpyHostToDevice, nullptr),
               "swap_in_block");
  }
}

void DeviceKvPool::rerotate_keys(int32_t block, int32_t num_rows, int32_t delta) {
  assert(rope_ && "rerotate_keys: this pool was made without the model's rope");
  assert(block < num_blocks() && num_rows >= 0 && num_rows <= spec_.block_size);
  if (num_rows == 0) return;
  const ModelConfig& model = rope_->config;
  // As HostKvPool: storage layer l holds kv_size / head_dim heads of model
  // layer l / per_layer (the CUDA backend itself uses per_layer 1).
  const int32_t per_layer = spec_.num_layers / model.num_layers;
  const int32_t heads = spec_.kv_size / model.head_dim;
  assert(per_layer * model.num_layers == spec_.num_layers && heads * model.head_dim == spec_.kv_size);
  const float* factors = rope_->rope_freq_factors.empty() ? nullptr : rope_->rope_freq_factors.data();
  const size_t n = static_cast<size_t>(num_rows) * row_bytes_;  // only the rows that hold keys
  rerotate_rows_.resize(n * static_cast<size_t>(spec_.num_layers));
  for (int32_t l = 0; l < spec_.num_layers; ++l) {
    cuda_check(cudaMemcpyAsync(rerotate_rows_.data() + l * n, k_layer(l) + block * block_bytes(), n,
                               cudaMemcpyDeviceToHost, nullptr),
               "rerotate_keys: copy to the host");
  }
  cuda_check(cudaStreamSynchronize(nullptr), "rerotate_keys: synchronise");
  for (int32_t l = 0; l < spec_.num_layers; ++l) {
    rerotate_kv_rows(spec_.type, rerotate_rows_.data() + l * n, num_rows, heads, model.head_dim, delta,
                     model.layer_rope_base(l / per_layer), model.rope_style, factors);
  }
  for (int32_t l = 0; l < spec_.num_layers; ++l) {
    cuda_check(cudaMemcpyAsync(k_layer(l) + block * block_bytes(), rerotate_rows_.data() + l * n, n,
                               cudaMemcpyHostToDevice, nullptr),
               "rerotate_keys: copy back");
  }
  // The staging buffer is pageable: the copies above are staged before they
  // return, but wait anyway so the next call may reuse it without doubt.
  cuda_check(cudaStreamSynchronize(nullptr), "rerotate_keys: synchronise");
}

}  // namespace kvscope
