// CpuDescription: which CPU a measurement ran on, for benchmark records. A
// prefill figure from a Sapphire Rapids Xeon (AVX-512 VNNI) and one from an
// AMD EPYC without it are different facts; every record the project writes
// (kvscope-cli bench / bench-seeds, kernel_bench, snapshot_bench, the
// scripts/dev benchmark scripts through `kvscope-cli bench`) says which.
//   tested by tests/kernels/cpu_description_test.cpp
#pragma once

#include <string>

namespace kvscope {

struct CpuDescription {
  std::string model_name;     // /proc/cpuinfo "model name" (x86) or "Model"/"CPU part" (ARM); "unknown"
  int num_cpus_online = 0;    // logical CPUs the machine has
  int num_cpus_usable = 0;    // CPUs this process may keep busy (affinity mask, cgroup quota: usable_cpus.h)
  std::string isa;            // the kernels' level in use: "scalar", "avx2" or "avx512"
  std::string isa_detail;     // what that level means, e.g. "AVX-512 F/BW/DQ/VL + VNNI" (+ "; AMX tiles for prefill")
  std::string isa_detected;   // the highest level this CPU supports ($KVSCOPE_CPU may lower `isa`)
};

// Reads /proc/cpuinfo and the affinity mask once per call (cheap; call it once
// per record, not per iteration).
CpuDescription describe_cpu();

// "Intel(R) Xeon(R) Platinum 8480+, 2 of 224 CPUs usable, avx512 (AVX-512 F/BW/DQ/VL + VNNI)".
std::string cpu_summary(const CpuDescription& cpu);

}  // namespace kvscope
