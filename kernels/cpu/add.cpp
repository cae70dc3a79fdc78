// add; see add.h. One rounding per element, so any vectorisation the compiler
// picks gives the same bits.
#include "kernels/cpu/add.h"

namespace kvscope {

void add(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace kvscope
