// RMSNorm over each token row: out = x / sqrt(mean(x^2) + eps) * weight.
// Reference: kernels/reference/rms_norm.cpp. Each row is reduced on its own
// in a fixed order, so results do not depend on the batch.
#pragma once

#include <cstdint>

namespace kvscope {

// x, out: [num_tokens][n]; weight: [n]. out may alias x.
void rms_norm(const float* x, const float* weight, int64_t num_tokens, int64_t n, float eps, float* out);

}  // namespace kvscope
