// Embedding lookup kernel; see embedding.cuh. One block per token, one
// output element per thread (rows are short: 576 to 8192 elements).
#include "kernels/cuda/embedding.cuh"

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void embedding_kernel(TensorType type, const uint8_t* table, int64_t vocab_size, int64_t dim,
                                 int64_t row_bytes, const int32_t* token_ids, float* out) {
  await_previous_kernel();
  const int64_t t = blockIdx.x;
  const int32_t id = token_ids[t];
  float* out_row = out + t * dim;  // out[t][i] = out + t * dim + i
  if (id < 0 || id >= vocab_size) {
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) out_row[i] = NAN;
    return;
  }
  const uint8_t* row = table + static_cast<int64_t>(id) * row_bytes;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    float v = 0.0f;
    switch (type) {
      case TensorType::F32: v = reinterpret_cast<const float*>(row)[i]; break;
      case TensorType::F16: v = f16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[i]); break;
      case TensorType::Q8_0: v = q8_0_element(row + (i / kQBlockElems) * kQ8_0BlockBytes, i % kQBlockElems); break;
      case TensorType::Q4_1: v = q4_1_element(row + (i / kQBlockElems) * kQ4_1BlockBytes, i % kQBlockElems); break;
      default: v = NAN; break;  // excluded by the launcher
    }
    out_row[i] = v;
  }
}

}  // namespace

cudaError_t embedding_lookup(TensorType type, const void* table, int64_t vocab_size, int64_t dim,
                             const int32_t* token_ids, int64_t num_tokens, float* out, cudaStream_t stream) {
  const char* op = "embedding_lookup";
  KVSCOPE_CUDA_REQUIRE(op, type == TensorType::F32 || type == TensorType::F16 || type == TensorType::Q8_0 ||
                               type == TensorType::Q4_1);
  KVSCOPE_CUDA_REQUIRE(op, dim > 0);
  KVSCOPE_CUDA_REQUIRE(op, (type != TensorType::Q8_0 && type != TensorType::Q4_1) || dim % kQBlockElems == 0);
  KVSCOPE_CUDA_REQUIRE(op, vocab_size > 0);
  KVSCOPE_CUDA_REQUIRE(op, num_tokens >= 0 && num_tokens <= 0x7fffffff);
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, table != nullptr && token_ids != nullptr && out != nullptr);
  int64_t row_bytes = 0;
  switch (type) {
    case TensorType::F32: row_bytes = 4 * dim; break;
    case TensorType::F16: row_bytes = 2 * dim; break;
    case TensorType::Q8_0: row_bytes = dim / kQBlockElems * kQ8_0BlockBytes; break;
    default: row_bytes = dim / kQBlockElems * kQ4_1BlockBytes; break;  // Q4_1
  }
  launch_kernel(embedding_kernel, static_cast<unsigned int>(num_tokens), kThreads, 0, stream, type,
                static_cast<const uint8_t*>(table), vocab_size, dim, row_bytes, token_ids, out);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
