// One growing, 64-byte-aligned buffer per thread for the kernels that unpack
// a row group once and read it for many tokens (the 5-bit layout in
// packed_matmul_avx512.cpp, the AMX kernels). Valid until this thread's next
// call; a kernel does not hold it across a call into another kernel.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvscope::detail {

// At least `bytes` bytes (throws std::bad_alloc when that cannot be had).
uint8_t* thread_scratch(size_t bytes);

}  // namespace kvscope::detail
