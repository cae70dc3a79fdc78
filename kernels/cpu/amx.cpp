// AMX availability; see amx.h.
#include "kernels/cpu/amx.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kvscope {
namespace {

#if defined(__x86_64__)
// Linux's arch_prctl request for an extended state component, and AMX's
// tile data component (XFEATURE_XTILEDATA): the kernel refuses tile
// instructions (SIGILL) until a process asks for it.
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool detect() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool amx_tile = (edx >> 24) & 1u, amx_int8 = (edx >> 25) & 1u;
  if (!amx_tile || !amx_int8) return false;
  // OSXSAVE (CPUID.1:ECX bit 27) before reading XCR0; tile config and data
  // are XCR0 bits 17 and 18.
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || ((ecx >> 27) & 1u) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3u) != 3u) return false;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
#else
bool detect() { return false; }
#endif

std::atomic<bool>& switched_on() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("KVSCOPE_AMX");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }()};
  return on;
}

}  // namespace

bool amx_available() {
  static const bool available = detect();
  return available;
}

bool amx_enabled() {
  return amx_available() && cpu_level() == CpuLevel::kAvx512 && switched_on().load(std::memory_order_relaxed);
}

bool set_amx_enabled(bool on) {
  switched_on().store(on, std::memory_order_relaxed);
  return amx_enabled();
}

}  // namespace kvscope
