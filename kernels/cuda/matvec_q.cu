// Dequantising matrix-vector kernel; see matvec_q.cuh. One warp per output
// row, 4 rows per block: lane l takes the row's quantisation blocks
// l, l + 32, ..., so a warp reads 32 consecutive blocks (640 B for Q4_1,
// 1088 B for Q8_0) at a time, then a shuffle tree sums the lanes. Each
// block's scale (and Q4_1 min) is factored out of its 32 products:
//   Q8_0: d * sum_j q_j x_j;   Q4_1: d * sum_j q_j x_j + m * sum_j x_j.
// Napkin math: a 576 x 1536 Q4_1 matrix is 553 KB, about 0.2 us at 3 TB/s;
// launch latency (several us) dominates at SmolLM2's size.
#include "kernels/cuda/matvec_q.cuh"

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"

namespace kvscope::cuda {
namespace {

constexpr int kRowsPerBlock = 4;
constexpr int kThreads = kRowsPerBlock * kWarpSize;

template <TensorType kType>
__global__ void matvec_kernel(const uint8_t* w, int64_t num_rows, int64_t row_len, const float* x, float* y) {
  constexpr int block_bytes = kType == TensorType::Q8_0 ? kQ8_0BlockBytes : kQ4_1BlockBytes;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  const int64_t t = blockIdx.y;
  if (r >= num_rows) return;  // whole warps leave together: r is warp-uniform
  const int64_t num_blocks = row_len / kQBlockElems;
  const uint8_t* w_row = w + r * num_blocks * block_bytes;  // w[r] = w + r * row_bytes
  const float* x_row = x + t * row_len;                     // x[t][i] = x + t * row_len + i
  float acc = 0.0f;
  for (int64_t b = lane; b < num_blocks; b += kWarpSize) {
    const uint8_t* block = w_row + b * block_bytes;
    const float* xb = x_row + b * kQBlockElems;
    const float d = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(block));
    if constexpr (kType == TensorType::Q8_0) {
      float qx = 0.0f;
      for (int j = 0; j < kQBlockElems; ++j) qx += static_cast<float>(static_cast<int8_t>(block[2 + j])) * xb[j];
      acc += d * qx;
    } else {
      const float m = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(block + 2));
      float qx = 0.0f;
      float sx = 0.0f;
      for (int j = 0; j < 16; ++j) {  // byte j: low nibble is element j, high nibble element j + 16
        const uint8_t byte = block[4 + j];
        qx += static_cast<float>(byte & 15) * xb[j] + static_cast<float>(byte >> 4) * xb[j + 16];
        sx += xb[j] + xb[j + 16];
      }
      acc += d * qx + m * sx;
    }
  }
  acc = warp_sum(acc);
  if (lane == 0) y[t * num_rows + r] = acc;  // y[t][r]
}

}  // namespace

cudaError_t matvec_q(TensorType type, const void* w, int64_t num_rows, int64_t row_len, const float* x,
                     int64_t num_tokens, float* y, cudaStream_t stream) {
  const char* op = "matvec_q";
  KVSCOPE_CUDA_REQUIRE(op, type == TensorType::Q4_1 || type == TensorType::Q8_0);
  KVSCOPE_CUDA_REQUIRE(op, row_len > 0 && row_len % kQBlockElems == 0);
  KVSCOPE_CUDA_REQUIRE(op, num_rows > 0);
  KVSCOPE_CUDA_REQUIRE(op, num_rows / kRowsPerBlock < 0x7fffffff);  // grid.x limit
  KVSCOPE_CUDA_REQUIRE(op, num_tokens >= 0 && num_tokens <= 65535);  // grid.y limit
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, w != nullptr && x != nullptr && y != nullptr);
  const dim3 grid(num_blocks_for(num_rows, kRowsPerBlock), static_cast<unsigned int>(num_tokens));
  const auto* wb = static_cast<const uint8_t*>(w);
  if (type == TensorType::Q8_0) {
    matvec_kernel<TensorType::Q8_0><<<grid, kThreads, 0, stream>>>(wb, num_rows, row_len, x, y);
  } else {
    matvec_kernel<TensorType::Q4_1><<<grid, kThreads, 0, stream>>>(wb, num_rows, row_len, x, y);
  }
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
