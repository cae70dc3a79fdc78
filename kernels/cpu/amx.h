// Intel AMX (Advanced Matrix Extensions: Sapphire Rapids and later Xeons)
// for the packed integer matmul at 16 tokens or more (prefill): whether this
// process may use the tile registers, and a switch for tests and A/B runs.
// AMD EPYC and older Intel CPUs have none; then the AVX-512 VNNI kernel runs,
// which computes the same bits (packed_matmul_amx.cpp says why).
#pragma once

namespace kvscope {

// The CPU has AMX-TILE and AMX-INT8, the OS saves tile state (XCR0), and
// Linux granted this process the tile data permission (arch_prctl
// ARCH_REQ_XCOMP_PERM, asked on the first call). False off x86-64.
bool amx_available();

// available, the kernels run at CpuLevel::kAvx512, and not switched off:
// $KVSCOPE_AMX=0 on first use, or set_amx_enabled(false).
bool amx_enabled();

// Switches AMX on (if available) or off; returns the state in effect. Not for
// use while kernels run on other threads.
bool set_amx_enabled(bool on);

}  // namespace kvscope
