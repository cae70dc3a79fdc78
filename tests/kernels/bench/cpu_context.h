// The CPU a Google Benchmark run measured, in its context block (console
// header and the "context" object of --benchmark_format=json), so that no
// timing is read without its machine: cpu_model_name, cpu_isa (the kernels'
// level in use, which $KVSCOPE_CPU may lower), cpu_isa_detected, and the
// logical CPUs online and usable. Shared by kernel_bench and snapshot_bench.
#pragma once

#include <string>

#include <benchmark/benchmark.h>

#include "kernels/cpu/cpu_description.h"

namespace kvscope::bench {

inline void add_cpu_context() {
  const CpuDescription cpu = describe_cpu();
  benchmark::AddCustomContext("cpu_model_name", cpu.model_name);
  benchmark::AddCustomContext("cpu_isa", cpu.isa + " (" + cpu.isa_detail + ")");
  benchmark::AddCustomContext("cpu_isa_detected", cpu.isa_detected);
  benchmark::AddCustomContext("cpu_num_online", std::to_string(cpu.num_cpus_online));
  benchmark::AddCustomContext("cpu_num_usable", std::to_string(cpu.num_cpus_usable));
}

// main() of a benchmark program: BENCHMARK_MAIN() plus the CPU context.
inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  add_cpu_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace kvscope::bench
