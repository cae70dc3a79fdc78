#include "kernels/reference/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvscope {

void attention_ref(const float* q, const int32_t* q_pos, int32_t num_queries, const float* k,
                   const float* v, int32_t num_heads, int32_t num_kv_heads, int32_t head_dim,
                   float scale, int32_t sliding_window, float* out, float softcap) {
  const int32_t group = num_heads / num_kv_heads;
  const int64_t q_row = static_cast<int64_t>(num_heads) * head_dim;
  const int64_t kv_row = static_cast<int64_t>(num_kv_heads) * head_dim;
  std::vector<double> scores;
  for (int32_t i = 0; i < num_queries; ++i) {
    const int32_t pos = q_pos[i];
    const int32_t first = sliding_window > 0 ? std::max(0, pos - sliding_window + 1) : 0;
    for (int32_t h = 0; h < num_heads; ++h) {
      const int32_t kvh = h / group;
      const float* qh = q + i * q_row + static_cast<int64_t>(h) * head_dim;
      scores.assign(static_cast<size_t>(pos + 1 - first), 0.0);
      double m = -INFINITY;
      for (int32_t p = first; p <= pos; ++p) {
        const float* kp = k + p * kv_row + static_cast<int64_t>(kvh) * head_dim;
        double s = 0.0;
        for (int32_t d = 0; d < head_dim; ++d) s += static_cast<double>(qh[d]) * kp[d];
        s *= scale;
        if (softcap > 0.0f) s = softcap * std::tanh(s / softcap);
        scores[p - first] = s;
        m = std::max(m, scores[p - first]);
      }
      double sum = 0.0;
      for (double& s : scores) sum += (s = std::exp(s - m));
      float* o = out + i * q_row + static_cast<int64_t>(h) * head_dim;
      for (int32_t d = 0; d < head_dim; ++d) {
        double acc = 0.0;
        for (int32_t p = first; p <= pos; ++p) {
          acc += scores[p - first] * v[p * kv_row + static_cast<int64_t>(kvh) * head_dim + d];
        }
        o[d] = static_cast<float>(acc / sum);
      }
    }
  }
}

}  // namespace kvscope
