#include "kernels/cpu/huge_pages.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kvscope {
namespace {

// Chunks of at least this size: a model's weights take a few chunks, and the
// tail left unused in the last one is small next to them.
constexpr size_t kChunkBytes = size_t{32} << 20;
// Each allocation is preceded by one 64-byte header naming its chunk.
constexpr size_t kHeaderBytes = 64;

struct Chunk {
  uint8_t* base = nullptr;
  size_t bytes = 0;
  size_t used = 0;
  size_t live = 0;  // allocations not yet released
};

struct Header {
  Chunk* chunk;
};

std::mutex g_mutex;
Chunk* g_open = nullptr;  // the chunk new allocations come from
size_t g_chunks_held = 0;

Chunk* new_chunk(size_t min_bytes) {
  const size_t want = min_bytes > kChunkBytes ? min_bytes : kChunkBytes;
  const size_t bytes = (want + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  auto* base = static_cast<uint8_t*>(std::aligned_alloc(kHugePageBytes, bytes));
  if (base == nullptr) return nullptr;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: where THP is off ("never") this fails and 4 KiB pages serve.
  (void)madvise(base, bytes, MADV_HUGEPAGE);
#endif
  // Pages are faulted in (as huge pages) when the allocations are zeroed.
  auto* c = new Chunk{base, bytes, 0, 0};
  ++g_chunks_held;
  return c;
}

void free_chunk(Chunk* c) {
  std::free(c->base);
  delete c;
  --g_chunks_held;
}

}  // namespace

void* allocate_huge_page_backed(size_t bytes) {
  const size_t need = kHeaderBytes + (bytes + 63) / 64 * 64;
  uint8_t* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_open == nullptr || g_open->bytes - g_open->used < need) {
      Chunk* c = new_chunk(need);
      if (c == nullptr) return nullptr;
      // The old open chunk stays alive while it has allocations.
      if (g_open != nullptr && g_open->live == 0) free_chunk(g_open);
      g_open = c;
    }
    p = g_open->base + g_open->used;
    g_open->used += need;
    ++g_open->live;
    const Header h{g_open};
    std::memcpy(p, &h, sizeof h);
  }
  std::memset(p + kHeaderBytes, 0, need - kHeaderBytes);
  return p + kHeaderBytes;
}

void release_huge_page_backed(void* p) {
  if (p == nullptr) return;
  Header h{};
  std::memcpy(&h, static_cast<uint8_t*>(p) - kHeaderBytes, sizeof h);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--h.chunk->live != 0) return;
  // Empty: free it, or (the open chunk) start it over rather than keep a
  // mostly used chunk around.
  if (h.chunk == g_open) g_open = nullptr;
  free_chunk(h.chunk);
}

size_t huge_page_chunks_held() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_chunks_held;
}

#if defined(__linux__)
void* reserve_lazy_huge_pages(size_t bytes) {
  if (bytes == 0) return nullptr;
  // Anonymous mappings are zero-filled on first touch. Map a huge page more
  // than asked, keep the aligned part and give the two ends back.
  const size_t length = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* raw = mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + length + kHugePageBytes;
  if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
#if defined(MADV_HUGEPAGE)
  // Advice only: where THP is off ("never") this fails and 4 KiB pages serve.
  (void)madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<void*>(aligned);
}

void release_lazy_huge_pages(void* p, size_t bytes) {
  if (p == nullptr) return;
  munmap(p, (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
}
#else
void* reserve_lazy_huge_pages(size_t bytes) { return bytes == 0 ? nullptr : std::calloc(bytes, 1); }
void release_lazy_huge_pages(void* p, size_t) { std::free(p); }
#endif

}  // namespace kvscope
