// allocate_huge_page_backed: aligned, zeroed, non-overlapping memory whose
// chunks go back to the system with their last allocation, and (where Linux
// THP allows it) actually backed by huge pages. reserve_lazy_huge_pages (the
// KV pool's): aligned, zeroed, costing no memory until written, and backed
// by huge pages once written.
#include "kernels/cpu/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace kvscope {
namespace {

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// The AnonHugePages of the mappings that hold [p, p + bytes), in kB.
long anon_huge_kb(const void* p, size_t bytes) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
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
  return huge_kb;
}

// This process's resident memory, in bytes.
long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// The kernel's THP setting ("always [madvise] never"), empty off Linux.
std::string thp_setting() {
  std::ifstream setting("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string thp;
  std::getline(setting, thp);
  return thp;
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
  const std::string thp = thp_setting();
  if (thp.find("[never]") != std::string::npos || thp.empty()) {
    GTEST_SKIP() << "transparent huge pages are off on this kernel: " << thp;
  }
  const size_t bytes = 8u << 20;
  auto* p = static_cast<uint8_t*>(allocate_huge_page_backed(bytes));
  ASSERT_NE(p, nullptr);
  const long huge_kb = anon_huge_kb(p, bytes);
  release_huge_page_backed(p);
  EXPECT_GE(huge_kb, 2048) << "no huge page behind the allocation (THP setting: " << thp << ")";
#else
  GTEST_SKIP() << "huge page backing is checked on Linux only";
#endif
}

// The KV pool's reservation: nothing resident until written (a 512 MiB
// budget must not cost 512 MiB at load), zero where first read, aligned to a
// huge page, and backed by huge pages where it was written (Linux THP not
// "never"), so a new KV block seldom faults.
TEST(HugePages, LazyReservationCostsNothingUntilWrittenThenUsesHugePages) {
#if defined(__linux__)
  EXPECT_EQ(reserve_lazy_huge_pages(0), nullptr);
  release_lazy_huge_pages(nullptr, 0);  // a no-op
  const size_t bytes = (96u << 20) + 12345;
  const long resident_before = resident_bytes();
  auto* p = static_cast<uint8_t*>(reserve_lazy_huge_pages(bytes));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
  EXPECT_LT(resident_bytes() - resident_before, long{8} << 20) << "the reservation was touched";
  // Written as a KV pool fills: a few rows here and there, the last byte too.
  for (size_t at : {size_t{0}, size_t{5} << 20, bytes - 1}) {
    EXPECT_EQ(p[at], 0);
    p[at] = 0x5a;
  }
  EXPECT_TRUE(all_zero(p + 1, 4096));  // its neighbours still read zero
  const std::string thp = thp_setting();
  if (thp.find("[never]") == std::string::npos && !thp.empty()) {
    EXPECT_GE(anon_huge_kb(p, bytes), 2048) << "no huge page behind the written part (THP setting: " << thp << ")";
  }
  release_lazy_huge_pages(p, bytes);
#else
  GTEST_SKIP() << "the lazy reservation is checked on Linux only";
#endif
}

}  // namespace
}  // namespace kvscope
