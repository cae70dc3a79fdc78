// Read bandwidth of this machine, for the decode floor that `bench` reports:
// one decode step reads every weight once, so tokens/s can never exceed
// bandwidth / weight bytes.
#pragma once

#include <cstddef>

namespace kvscope::cli {

// Best GB/s (1e9 bytes) of `repeats` timed passes reading a buffer of `bytes`
// with `threads` threads (one warm-up pass first, so a buffer that fits in the
// caches is measured from the caches, as decode reads the model). The best
// pass, not the median: the floor is a bound on speed, and on a shared
// machine most passes lose time to other processes (docs/decode-profile.md:
// decode beat a median-based floor). The buffer is huge-page backed like the
// packed weights (kernels/cpu/huge_pages.h).
double measure_read_bandwidth(size_t bytes, int threads, int repeats);

}  // namespace kvscope::cli
