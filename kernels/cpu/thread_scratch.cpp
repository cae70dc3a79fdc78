#include "kernels/cpu/thread_scratch.h"

#include <cstdlib>
#include <memory>
#include <new>

namespace kvscope::detail {

uint8_t* thread_scratch(size_t bytes) {
  struct Buffer {
    std::unique_ptr<uint8_t, decltype(&std::free)> data{nullptr, &std::free};
    size_t size = 0;
  };
  thread_local Buffer buf;
  if (buf.size < bytes) {
    const size_t size = (bytes + 63) / 64 * 64;
    buf.data.reset(static_cast<uint8_t*>(std::aligned_alloc(64, size)));
    if (!buf.data) throw std::bad_alloc();
    buf.size = size;
  }
  return buf.data.get();
}

}  // namespace kvscope::detail
