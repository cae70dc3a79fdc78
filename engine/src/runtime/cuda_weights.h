// CudaWeights: a model's weights in GPU memory for the CUDA backend, uploaded
// once and kept in their GGUF types (Q4_1 / Q8_0 matrices stay quantised: the
// kernels dequantise in registers for decode, kernels/cuda/matvec_q.cuh, or
// tile by tile to bf16 for a prefill GEMM, kernels/cuda/gemm_bf16.cuh), and
// cuda_unsupported(), the one place that says which models the CUDA backend
// can run. Compiled only with KVSCOPE_CUDA=ON.
//   tested by tests/engine/runtime/cuda_backend_test.cpp
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvscope/engine_config.h"
#include "kvscope/result.h"
#include "model/model_weights.h"

namespace kvscope {

// A WeightMatrix whose bytes are on the device.
struct DeviceMatrix {
  TensorType type = TensorType::F32;
  const void* data = nullptr;  // [num_rows][row_bytes(type, row_len)]
  int64_t num_rows = 0;
  int64_t row_len = 0;
};

struct DeviceLayerWeights {
  const float* attn_norm = nullptr;  // [hidden]
  const float* ffn_norm = nullptr;   // [hidden]
  DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

// Why the CUDA backend cannot run `weights` under `config`, naming what it
// lacks ("gemma3 (per-head Q/K norms, post-norms, GELU)", "layer 0 attn_q is
// Q4_K", "tp = 2"); empty when it can. The backend runs the Llama family
// with Q4_1 / Q8_0 matrices, one GPU, without a draft model.
std::string cuda_unsupported(const ModelWeights& weights, const EngineConfig& config);

class CudaWeights {
 public:
  // Copies every matrix and vector the forward pass reads to the device (a
  // tied head shares the embedding's copy). Precondition:
  // cuda_unsupported(weights, ...) is empty. The error names the bytes that
  // could not be allocated.
  static Result<std::unique_ptr<CudaWeights>> upload(const ModelWeights& weights);
  ~CudaWeights();
  CudaWeights(const CudaWeights&) = delete;
  CudaWeights& operator=(const CudaWeights&) = delete;

  size_t bytes() const { return bytes_; }

  DeviceMatrix token_embd;  // [vocab x hidden]
  DeviceMatrix output;      // [vocab x hidden]; token_embd's bytes when tied
  const float* output_norm = nullptr;
  const float* rope_freq_factors = nullptr;  // [head_dim / 2], or null
  std::vector<DeviceLayerWeights> layers;

 private:
  CudaWeights() = default;
  void* base_ = nullptr;  // one allocation for everything above
  size_t bytes_ = 0;
};

}  // namespace kvscope
