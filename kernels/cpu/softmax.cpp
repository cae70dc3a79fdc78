// softmax; see softmax.h. max, exp(x - max) and a sequential f32 sum per row;
// scalar because it is off the per-layer hot path (attention has its own).
#include "kernels/cpu/softmax.h"

#include <cmath>

namespace kvscope {

void softmax(const float* x, int64_t num_rows, int64_t n, float* out) {
  for (int64_t r = 0; r < num_rows; ++r) {
    const float* xr = x + r * n;
    float* o = out + r * n;
    if (n <= 0) continue;
    float max = xr[0];
    for (int64_t i = 1; i < n; ++i) max = std::fmax(max, xr[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      o[i] = std::exp(xr[i] - max);
      sum += o[i];
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < n; ++i) o[i] *= inv;
  }
}

}  // namespace kvscope
