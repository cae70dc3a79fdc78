// The sweep layout of the tensor-core matvec kernels (matvec_mma_sweep.cu):
// for launches of many more blocks than the GPU holds, a block stages its
// tokens' whole rows once and takes several 16-row groups, with the plain
// layout's bits. matvec_mma.cu's launchers choose it. Internal to
// kernels/cuda.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/device_shape.h"
#include "kernels/cuda/matvec_outputs.cuh"
#include "kernels/cuda/matvec_q.cuh"

namespace kvscope::cuda {

// Row groups per sweep block for a launch of row_groups x token_groups plain
// blocks, or 1: not swept (matvec_q.cuh's tensor_core_sweep_groups is this
// rule by row and token counts).
int sweep_groups(TensorCoreSplit split, int64_t row_groups, int64_t token_groups, int64_t row_len,
                 const DeviceShape& d);

// Whether the current device let the sweep kernels have their shared memory;
// if not, launches are plain.
bool sweep_kernels_ready();

// matvec_mma_multi's and matvec_mma_glu's launches swept, `groups` (> 1, from
// sweep_groups) row groups a block.
cudaError_t launch_sweep_multi(TensorType type, const MultiOutputs& outputs, int64_t total_rows, int64_t row_len,
                               const float* x, int64_t num_tokens, InputNorm norm, int groups, cudaStream_t stream);
cudaError_t launch_sweep_glu(TensorType type, const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len,
                             const float* x, int64_t num_tokens, GluActivation activation, float* out, int64_t ld,
                             InputNorm norm, int groups, cudaStream_t stream);

}  // namespace kvscope::cuda
