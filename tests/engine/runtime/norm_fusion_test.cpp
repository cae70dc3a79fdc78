// The rule that decides, step by step, whether the CUDA backend folds its
// norms into the matmuls (runtime/norm_fusion.h, the setting gpu_norm_fusion).
// The rule is plain host code, so it is tested here without a GPU; that fused
// and separate norms give the same bits is cuda_backend_test's
// FusedNormsAreBitwiseTheSeparateOnes.
#include "runtime/norm_fusion.h"

#include <gtest/gtest.h>

namespace kvscope {
namespace {

TEST(NormFusion, OnAndOffAreObeyedAtEverySize) {
  for (bool tensor_cores : {false, true}) {
    for (int32_t rows : {1, 8, 9, 64, 2048}) {
      EXPECT_TRUE(fuses_norms(GpuNormFusion::On, tensor_cores, rows)) << rows;
      EXPECT_FALSE(fuses_norms(GpuNormFusion::Off, tensor_cores, rows)) << rows;
    }
  }
}

// Auto fuses wherever the H200 measured it faster: every f32 step, and
// tensor-core steps of at most kMaxRowsFusedOnTensorCores rows.
TEST(NormFusion, AutoFusesF32AlwaysAndTensorCoresOnlyInSmallSteps) {
  for (int32_t rows : {1, 8, 9, 64, 2048}) EXPECT_TRUE(fuses_norms(GpuNormFusion::Auto, false, rows)) << rows;
  EXPECT_TRUE(fuses_norms(GpuNormFusion::Auto, true, 1));
  EXPECT_TRUE(fuses_norms(GpuNormFusion::Auto, true, kMaxRowsFusedOnTensorCores));
  EXPECT_FALSE(fuses_norms(GpuNormFusion::Auto, true, kMaxRowsFusedOnTensorCores + 1));
  EXPECT_FALSE(fuses_norms(GpuNormFusion::Auto, true, 64));
}

}  // namespace
}  // namespace kvscope
