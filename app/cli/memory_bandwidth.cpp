#include "memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/cpu/huge_pages.h"

namespace kvscope::cli {
namespace {

// Sums 64-bit words; the result is used so the reads cannot be optimised away.
uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

}  // namespace

double measure_read_bandwidth(size_t bytes, int threads, int repeats) {
  const size_t words = bytes / sizeof(uint64_t);
  // The same kind of memory as the packed weights decode reads (huge pages
  // where the OS allows them): with 4 KiB pages this probe read ~8 GB/s where
  // the same read on huge pages ran ~13 GB/s, and it called a floor that
  // llama.cpp beat.
  auto* buffer = static_cast<uint64_t*>(allocate_huge_page_backed(words * sizeof(uint64_t)));
  if (buffer == nullptr) return 0.0;
  for (size_t i = 0; i < words; ++i) buffer[i] = i;  // touch every page
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  auto pass = [&] {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t begin = words * static_cast<size_t>(t) / static_cast<size_t>(threads);
        const size_t end = words * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
        sums[static_cast<size_t>(t)] += sum_words(buffer + begin, end - begin);
      });
    }
    for (std::thread& th : pool) th.join();
  };
  pass();
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(words * sizeof(uint64_t)) / s / 1e9);
  }
  release_huge_page_backed(buffer);
  std::sort(rates.begin(), rates.end());
  volatile uint64_t sink = 0;
  for (uint64_t s : sums) sink = sink + s;
  (void)sink;
  return rates.back();  // the best pass: see memory_bandwidth.h
}

}  // namespace kvscope::cli
