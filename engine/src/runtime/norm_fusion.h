// Whether a CUDA step folds its RMSNorms into the matmuls that read them
// (the setting gpu_norm_fusion; CudaBackend::Options::norm_fusion). Kept
// apart from the backend so that the rule is tested without a GPU
// (tests/engine/runtime/norm_fusion_test.cpp).
//
// Why a rule and not always: a fused matmul's every thread block first
// computes the norm scales of the tokens it multiplies (a warp per token, from
// L2), then stages them. That prologue grows with the block's tokens: the f32
// kernel's blocks take at most 8, the tensor-core kernel's up to 32. Measured
// on an H200 (docs/cuda.md, decode steps fused vs not): with f32, 1.04 vs
// 1.22 ms at one sequence, 2.45 vs 2.60 at 16, 6.04 vs 6.11 at 64; on the
// tensor cores 1.51 vs 1.71 ms at one, 1.90 vs 1.97 at 16, but 3.85 vs 3.52
// at 64, and prefill steps of 2,048 rows slower too (3,302 vs 3,969 prompt
// tokens a second at 16 sequences). Fusing changes no bit (row_norm.cuh's
// one definition), so the choice may differ from step to step.
#pragma once

#include <cstdint>

#include "kvscope/engine_config.h"

namespace kvscope {

// Steps of at most this many rows fuse on the tensor cores under `auto`: the
// largest measured faster fused (16 decode rows; 64 were slower).
inline constexpr int32_t kMaxRowsFusedOnTensorCores = 16;

// For a step of num_rows rows whose matmuls run on the tensor cores or not
// (the setting gpu_matmul).
constexpr bool fuses_norms(GpuNormFusion setting, bool tensor_cores, int32_t num_rows) {
  switch (setting) {
    case GpuNormFusion::On: return true;
    case GpuNormFusion::Off: return false;
    case GpuNormFusion::Auto: return !tensor_cores || num_rows <= kMaxRowsFusedOnTensorCores;
  }
  return false;
}

}  // namespace kvscope
