// Memory for large read-mostly buffers (packed weights) backed by 2 MiB
// transparent huge pages where the OS allows it.
//
// Why: decode at batch 1 streams every weight once per token, so it runs at
// memory read bandwidth. With 4 KiB pages the hardware prefetchers stop at
// every page boundary and each page costs a TLB walk; on the machine of
// docs/decode-profile.md a 2-thread read of a 242 MB buffer went from ~8 GB/s
// (4 KiB pages) to ~13 GB/s (huge pages). Linux with THP set to "madvise"
// (a common default) only backs memory that asks for it with madvise().
//
// Most weights of a small model are under 2 MiB each (a SmolLM2-135M layer
// matrix is ~1 MiB), too small for a huge page of their own, so allocations
// are carved out of shared huge-page-aligned chunks. A chunk is returned to
// the system when the last allocation in it is released.
#pragma once

#include <cstddef>

namespace kvscope {

// Huge pages are 2 MiB on x86-64 and most arm64 kernels.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Zeroed memory of at least `bytes`, 64-byte aligned, inside a chunk that is
// kHugePageBytes-aligned and was advised MADV_HUGEPAGE before its first touch.
// Thread-safe. Release with release_huge_page_backed. nullptr when out of memory.
void* allocate_huge_page_backed(size_t bytes);

// Releases memory from allocate_huge_page_backed (nullptr: nothing).
void release_huge_page_backed(void* p);

// Chunks currently held (for tests: all released => 0).
size_t huge_page_chunks_held();

// Zeroed memory of `bytes` for a large buffer that fills up over time (the KV
// pool): kHugePageBytes-aligned and advised MADV_HUGEPAGE, but not touched
// here, so its pages are mapped only when first written and a large
// reservation costs nothing until it is used. Why huge pages: a KV block's
// rows of one layer are ~12 KiB, so with 4 KiB pages every new block took ~3
// page faults per layer, K and V (180 for SmolLM2), which at batch 1 made
// paged decode measurably slower than contiguous (docs/decode-profile.md);
// a 2 MiB page serves ~170 blocks of a layer. nullptr when out of memory.
// Release with release_lazy_huge_pages(p, bytes).
void* reserve_lazy_huge_pages(size_t bytes);
void release_lazy_huge_pages(void* p, size_t bytes);

}  // namespace kvscope
