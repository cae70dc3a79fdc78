// allocate_huge_page_backed: aligned, zeroed, non-overlapping memory whose
// chunks go back to the system with their last allocation, and (where Linux
// THP allows it) actually backed by huge pages.
#include "kernels/cpu/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kvscope {
namespace {

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

TEST(HugePages, AllocationsAreAlignedZeroedAndDisjoint) {
  const size_t held_before = huge_page_chunks_held();
  const std::vector<size_t> sizes = {1, 64, 100, 1u << 20, 3u << 20, 40u << 20, 5000};
  std::vector<uint8_t*> ptrs;
  for (size_t s : sizes) {
    auto* p = static_cast<uint8_t*>(allocate_huge_page_backed(s));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_TRUE(all_zero(p, s));
    std::memset(p, 0xab, s);  // writable; a neighbour overlapping it would lose its zeros
    ptrs.push_back(p);
  }
  for (size_t i = 0; i < ptrs.size(); ++i) {
    for (size_t j = 0; j < ptrs.size(); ++j) {
      if (i == j) continue;
      const bool disjoint = ptrs[i] + sizes[i] <= ptrs[j] || ptrs[j] + sizes[j] <= ptrs[i];
      EXPECT_TRUE(disjoint) << i << " overlaps " << j;
    }
  }
  EXPECT_GT(huge_page_chunks_held(), held_before);
  for (uint8_t* p : ptrs) release_huge_page_backed(p);
  EXPECT_EQ(huge_page_chunks_held(), held_before);
  release_huge_page_backed(nullptr);  // a no-op
}

// Linux only: "madvise" or "always" in the THP setting means the advice is
// honoured, so the kernel reports huge pages inside the chunk.
TEST(HugePages, BackedByHugePagesWhereTheKernelAllowsIt) {
#if defined(__linux__)
  std::ifstream setting("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string thp;
  std::getline(setting, thp);
  if (thp.find("[never]") != std::string::npos || thp.empty()) {
    GTEST_SKIP() << "transparent huge pages are off on this kernel: " << thp;
  }
  const size_t bytes = 8u << 20;
  auto* p = static_cast<uint8_t*>(allocate_huge_page_backed(bytes));
  ASSERT_NE(p, nullptr);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  // Sum AnonHugePages over the mappings that hold the allocation.
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  long huge_kb = 0;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = lo < addr + bytes && addr < hi;
      continue;
    }
    long kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kb) == 1) huge_kb += kb;
  }
  release_huge_page_backed(p);
  EXPECT_GE(huge_kb, 2048) << "no huge page behind the allocation (THP setting: " << thp << ")";
#else
  GTEST_SKIP() << "huge page backing is checked on Linux only";
#endif
}

}  // namespace
}  // namespace kvscope
