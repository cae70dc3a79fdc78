// Reference matmul; see matmul.h.
#include "kernels/reference/matmul.h"

#include <vector>

#include "kernels/reference/dequantize.h"

namespace kvscope {

void matmul_ref(TensorType type, const void* w, int64_t num_rows, int64_t row_len,
                const float* x, int64_t num_tokens, float* y) {
  const auto* bytes = static_cast<const uint8_t*>(w);
  const size_t stride = row_bytes(type, row_len);
  std::vector<float> row(static_cast<size_t>(row_len));
  for (int64_t r = 0; r < num_rows; ++r) {
    dequantize_row_ref(type, bytes + static_cast<size_t>(r) * stride, row.data(), row_len);
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float* xt = x + t * row_len;
      double sum = 0.0;
      for (int64_t i = 0; i < row_len; ++i) sum += static_cast<double>(row[i]) * xt[i];
      y[t * num_rows + r] = static_cast<float>(sum);
    }
  }
}

}  // namespace kvscope
