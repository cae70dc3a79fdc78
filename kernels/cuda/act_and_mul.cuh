// Gated activations of the feed-forward block on the GPU: SwiGLU
// (silu(gate) * up, Llama) and GeGLU (gelu_tanh(gate) * up, Gemma).
// Mirrors kernels/cpu/silu_mul.h and kernels/cpu/gelu_tanh_mul.h and the
// references in kernels/reference/elementwise.h; tested by
// tests/kernels/cuda/act_and_mul_test.cpp. Elementwise, so batch-invariant.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvscope::cuda {

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
// gate, up, out: [n] device f32; out may alias gate or up. Precondition: n >= 0.
cudaError_t silu_mul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream);

// out[i] = gelu_tanh(gate[i]) * up[i],
// gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))).
cudaError_t gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream);

}  // namespace kvscope::cuda
