// rerotate_kv_rows; see kv_rerotate.h. A context shift is rare (once per
// quarter of the context at most), so this is plain: load a block's rows,
// rope() them by delta, store them.
#include "kernels/cpu/kv_rerotate.h"

#include <vector>

#include "kernels/cpu/rope.h"

namespace kvscope {

void rerotate_kv_rows(KvCacheType type, uint8_t* rows, int64_t num_rows, int64_t num_heads, int64_t head_dim,
                      int32_t delta, float base, RopeStyle style, const float* freq_factors) {
  if (num_rows <= 0 || delta == 0) return;
  const int64_t width = num_heads * head_dim;
  const size_t row_bytes = kv_row_bytes(type, width);
  thread_local std::vector<float> keys;       // [num_rows][width]
  thread_local std::vector<int32_t> offsets;  // [num_rows] all delta
  keys.resize(static_cast<size_t>(num_rows * width));
  offsets.assign(static_cast<size_t>(num_rows), delta);
  for (int64_t r = 0; r < num_rows; ++r) {
    load_kv_row(type, rows + static_cast<size_t>(r) * row_bytes, static_cast<int32_t>(width),
                keys.data() + r * width);
  }
  rope(keys.data(), num_rows, num_heads, head_dim, offsets.data(), base, style, width, freq_factors);
  for (int64_t r = 0; r < num_rows; ++r) {
    store_kv_row(type, keys.data() + r * width, width, rows + static_cast<size_t>(r) * row_bytes);
  }
}

}  // namespace kvscope
