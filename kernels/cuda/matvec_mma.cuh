// The tensor-core launchers behind matvec_q's MatvecMath::kTensorCores
// (matvec_q.cuh); called by matvec_q.cu after its precondition checks, so
// they check only what is their own. Internal to kernels/cuda.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/matvec_outputs.cuh"
#include "kernels/cuda/matvec_q.cuh"

namespace kvscope::cuda {

cudaError_t matvec_mma_multi(TensorType type, const MultiOutputs& outputs, int64_t total_rows, int64_t row_len,
                             const float* x, int64_t num_tokens, cudaStream_t stream,
                             TensorCoreSplit split, InputNorm norm);

cudaError_t matvec_mma_glu(TensorType type, const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len,
                           const float* x, int64_t num_tokens, GluActivation activation, float* out, int64_t ld,
                           cudaStream_t stream, TensorCoreSplit split, InputNorm norm);

}  // namespace kvscope::cuda
