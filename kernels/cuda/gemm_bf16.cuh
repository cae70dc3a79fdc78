// Prefill matmuls on the tensor cores through cuBLAS: a bf16 x bf16 GEMM with
// f32 accumulation and f32 output (cublasGemmEx), and the quantised-weight
// prefill matmul built on it: the GGUF Q4_1 / Q8_0 weights stay quantised in
// device memory and are dequantised to bf16 one tile of rows at a time
// (dequantize_bf16.cuh) into a bounded workspace, the activations rounded to
// bf16 once. Decode (a few rows) uses matvec_q.cuh instead, which reads each
// weight byte once.
//
// Built as its own library, kvscope_kernels_cublas (kernels/cuda/CMakeLists.txt),
// so that only code calling it needs libcublas at load time; tested by
// tests/kernels/cuda/gemm_bf16_test.cpp (binary cuda_gemm_test).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/tensor_type.h"

namespace kvscope::cuda {

// y[t][r] = sum_k w[r][k] * x[t][k] for r < num_rows, t < num_tokens; f32 accumulation.
// w: [num_rows][row_len] bf16 bits; x: [num_tokens][row_len] bf16 bits;
// y: [num_tokens][ldy] f32, columns [0, num_rows) written. All device memory.
// Runs on `stream` (set on the handle). A cuBLAS failure is printed with its
// status and returned as cudaErrorUnknown.
// Preconditions: sizes > 0 and within int, ldy >= num_rows.
cudaError_t gemm_bf16(cublasHandle_t handle, const uint16_t* w, int64_t num_rows, int64_t row_len,
                      const uint16_t* x, int64_t num_tokens, float* y, int64_t ldy, cudaStream_t stream);

// Bytes of workspace for matmul_q_prefill: the bf16 activations and one bf16
// weight tile of tile_rows rows.
size_t matmul_q_prefill_workspace_bytes(int64_t num_tokens, int64_t row_len, int64_t tile_rows);

// y[t][r] = dot(dequant(w row r), x[t]) as matmul_ref computes it, with the
// weights and activations rounded to bf16 (about 3 significant digits each).
// w: [num_rows][row_bytes(type, row_len)] device bytes; x: [num_tokens][row_len]
// device f32; y: [num_tokens][num_rows] device f32; workspace: device bytes
// sized by matmul_q_prefill_workspace_bytes. Preconditions: type Q4_1 or
// Q8_0, row_len a positive multiple of 32, num_rows > 0, num_tokens >= 0,
// tile_rows > 0.
cudaError_t matmul_q_prefill(cublasHandle_t handle, TensorType type, const void* w, int64_t num_rows,
                             int64_t row_len, const float* x, int64_t num_tokens, float* y, int64_t tile_rows,
                             void* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace kvscope::cuda
