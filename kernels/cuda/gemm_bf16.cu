// cuBLAS launchers; see gemm_bf16.cuh. Layout: cuBLAS is column-major, so the
// row-major arrays read as their transposes:
//   w [num_rows][row_len] row-major   = W^T (row_len x num_rows) column-major, lda = row_len
//   x [num_tokens][row_len] row-major = X^T (row_len x num_tokens),           ldb = row_len
//   y [num_tokens][ldy] row-major     = Y^T (ldy x num_tokens),               ldc = ldy
// and Y^T = W X^T is C = op(A) B with A = W^T transposed (CUBLAS_OP_T), B = X^T:
// m = num_rows, n = num_tokens, k = row_len. A weight tile of rows [r0, r0 + m)
// writes C starting at y + r0, same ldc.
#include "kernels/cuda/gemm_bf16.cuh"

#include <algorithm>
#include <climits>
#include <cstdio>

#include "kernels/cuda/dequantize_bf16.cuh"
#include "kernels/cuda/launch_check.h"

namespace kvscope::cuda {
namespace {

cudaError_t check_cublas(cublasStatus_t status, const char* op, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return cudaSuccess;
  std::fprintf(stderr, "kvscope cuda %s: %s: %s\n", op, call, cublasGetStatusString(status));
  return cudaErrorUnknown;
}

// The GEMM without the precondition checks (callers made them).
cudaError_t run_gemm(cublasHandle_t handle, const uint16_t* w, int64_t num_rows, int64_t row_len, const uint16_t* x,
                     int64_t num_tokens, float* y, int64_t ldy, cudaStream_t stream, const char* op) {
  if (cudaError_t e = check_cublas(cublasSetStream(handle, stream), op, "cublasSetStream"); e != cudaSuccess) {
    return e;
  }
  const float alpha = 1.0f;
  const float beta = 0.0f;
  return check_cublas(
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(num_rows), static_cast<int>(num_tokens),
                   static_cast<int>(row_len), &alpha, w, CUDA_R_16BF, static_cast<int>(row_len), x, CUDA_R_16BF,
                   static_cast<int>(row_len), &beta, y, CUDA_R_32F, static_cast<int>(ldy), CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT),
      op, "cublasGemmEx");
}

}  // namespace

cudaError_t gemm_bf16(cublasHandle_t handle, const uint16_t* w, int64_t num_rows, int64_t row_len,
                      const uint16_t* x, int64_t num_tokens, float* y, int64_t ldy, cudaStream_t stream) {
  const char* op = "gemm_bf16";
  KVSCOPE_CUDA_REQUIRE(op, handle != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, num_rows > 0 && row_len > 0 && num_tokens > 0);
  KVSCOPE_CUDA_REQUIRE(op, num_rows <= INT_MAX && row_len <= INT_MAX && num_tokens <= INT_MAX && ldy <= INT_MAX);
  KVSCOPE_CUDA_REQUIRE(op, ldy >= num_rows);
  KVSCOPE_CUDA_REQUIRE(op, w != nullptr && x != nullptr && y != nullptr);
  return run_gemm(handle, w, num_rows, row_len, x, num_tokens, y, ldy, stream, op);
}

size_t matmul_q_prefill_workspace_bytes(int64_t num_tokens, int64_t row_len, int64_t tile_rows) {
  if (num_tokens < 0 || row_len <= 0 || tile_rows <= 0) return 0;
  return static_cast<size_t>(num_tokens + tile_rows) * static_cast<size_t>(row_len) * sizeof(uint16_t);
}

cudaError_t matmul_q_prefill(cublasHandle_t handle, TensorType type, const void* w, int64_t num_rows,
                             int64_t row_len, const float* x, int64_t num_tokens, float* y, int64_t tile_rows,
                             void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  const char* op = "matmul_q_prefill";
  KVSCOPE_CUDA_REQUIRE(op, type == TensorType::Q4_1 || type == TensorType::Q8_0);
  KVSCOPE_CUDA_REQUIRE(op, row_len > 0 && row_len % 32 == 0 && row_len <= INT_MAX);
  KVSCOPE_CUDA_REQUIRE(op, num_rows > 0 && num_rows <= INT_MAX && num_tokens >= 0 && num_tokens <= INT_MAX);
  KVSCOPE_CUDA_REQUIRE(op, tile_rows > 0);
  if (num_tokens == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, handle != nullptr && w != nullptr && x != nullptr && y != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, workspace != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, workspace_bytes >= matmul_q_prefill_workspace_bytes(num_tokens, row_len, tile_rows));
  // Workspace: x_bf16[num_tokens][row_len], then w_tile[tile_rows][row_len] (both bf16 bits).
  auto* x_bf16 = static_cast<uint16_t*>(workspace);
  uint16_t* w_tile = x_bf16 + num_tokens * row_len;
  if (cudaError_t e = f32_to_bf16(x, num_tokens * row_len, x_bf16, stream); e != cudaSuccess) return e;
  // Tiles run in stream order: tile i + 1's dequantisation waits for tile i's GEMM.
  for (int64_t r0 = 0; r0 < num_rows; r0 += tile_rows) {
    const int64_t rows = std::min(tile_rows, num_rows - r0);
    if (cudaError_t e = dequantize_rows_bf16(type, w, row_len, r0, rows, w_tile, stream); e != cudaSuccess) return e;
    if (cudaError_t e = run_gemm(handle, w_tile, rows, row_len, x_bf16, num_tokens, y + r0, num_rows, stream, op);
        e != cudaSuccess) {
      return e;
    }
  }
  return cudaSuccess;
}

}  // namespace kvscope::cuda
