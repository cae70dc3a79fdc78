// Dequantise-to-bf16 kernels; see dequantize_bf16.cuh. One thread per output
// element, 256 per block: element e of the tile is row e / row_len, column
// c = e % row_len, quantisation block c / 32, element c % 32 of it. The 32
// threads of a warp read one 20- or 34-byte block (broadcast loads) and write
// 64 contiguous bytes. Napkin math: a 1536 x 576 Q4_1 tile is 553 KB in and
// 1.8 MB out, about 1 us at 3 TB/s, next to a GEMM of the same rows.
#include "kernels/cuda/dequantize_bf16.cuh"

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 256;

__device__ inline uint16_t bf16_bits(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }

template <TensorType kType>
__global__ void dequantize_kernel(const uint8_t* w, int64_t row_len, int64_t first_row, int64_t count,
                                  uint16_t* out) {
  await_previous_kernel();
  constexpr int block_bytes = kType == TensorType::Q8_0 ? kQ8_0BlockBytes : kQ4_1BlockBytes;
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= count) return;
  const int64_t r = first_row + e / row_len;
  const int64_t c = e % row_len;
  // w[r] = w + r * (row_len / 32) * block_bytes; its block c / 32 holds element c % 32.
  const uint8_t* block = w + (r * (row_len / kQBlockElems) + c / kQBlockElems) * block_bytes;
  const int j = static_cast<int>(c % kQBlockElems);
  const float v = kType == TensorType::Q8_0 ? q8_0_element(block, j) : q4_1_element(block, j);
  out[e] = bf16_bits(v);  // out[r - first_row][c]
}

__global__ void f32_to_bf16_kernel(const float* x, int64_t n, uint16_t* out) {
  await_previous_kernel();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = bf16_bits(x[i]);
}

}  // namespace

cudaError_t dequantize_rows_bf16(TensorType type, const void* w, int64_t row_len, int64_t first_row,
                                 int64_t num_rows, uint16_t* out, cudaStream_t stream) {
  const char* op = "dequantize_rows_bf16";
  KVSCOPE_CUDA_REQUIRE(op, type == TensorType::Q4_1 || type == TensorType::Q8_0);
  KVSCOPE_CUDA_REQUIRE(op, row_len > 0 && row_len % kQBlockElems == 0);
  KVSCOPE_CUDA_REQUIRE(op, first_row >= 0 && num_rows >= 0);
  if (num_rows == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, w != nullptr && out != nullptr);
  const int64_t count = num_rows * row_len;
  KVSCOPE_CUDA_REQUIRE(op, (count + kThreads - 1) / kThreads <= 0x7fffffff);  // grid.x limit
  const unsigned int blocks = num_blocks_for(count, kThreads);
  const auto* bytes = static_cast<const uint8_t*>(w);
  if (type == TensorType::Q8_0) {
    launch_kernel(dequantize_kernel<TensorType::Q8_0>, blocks, kThreads, 0, stream, bytes, row_len, first_row, count,
                  out);
  } else {
    launch_kernel(dequantize_kernel<TensorType::Q4_1>, blocks, kThreads, 0, stream, bytes, row_len, first_row, count,
                  out);
  }
  return cudaGetLastError();
}

cudaError_t f32_to_bf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream) {
  const char* op = "f32_to_bf16";
  KVSCOPE_CUDA_REQUIRE(op, n >= 0);
  if (n == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, x != nullptr && out != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, (n + kThreads - 1) / kThreads <= 0x7fffffff);  // grid.x limit
  launch_kernel(f32_to_bf16_kernel, num_blocks_for(n, kThreads), kThreads, 0, stream, x, n, out);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
