// RMSNorm over each token row: out = x / sqrt(mean(x^2) + eps) * weight.
// Reference: kernels/reference/rms_norm.cpp. Each row is reduced on its own
// in a fixed order, so results do not depend on the batch.
#pragma once

#include <cstdint>

namespace kvscope {

// x, out: [num_tokens][n]; weight: [n]. out may alias x.
void rms_norm(const float* x, const float* weight, int64_t num_tokens, int64_t n, float eps, float* out);

// 1 / sqrt(mean(x^2) + eps) of one row x[n]: rms_norm() writes
// (x[i] * rms_norm_scale(x, n, eps)) * weight[i], and a kernel that folds the
// norm into its read of x (RowNorm) computes the same floats from this.
float rms_norm_scale(const float* x, int64_t n, float eps);

// An RMSNorm applied to input rows as a kernel reads them, so the normed row
// is never written (matmul_packed_stacked): each element is read as
// (x[i] * rms_norm_scale(x, n, eps)) * weight[i], bitwise what rms_norm()
// would have stored. weight: [n], the row width.
struct RowNorm {
  const float* weight = nullptr;
  float eps = 0.0f;
};

}  // namespace kvscope
