// Which vector instruction set the CPU EP's hand-written kernels use, chosen once per kernel.
//
// The library is built for AVX2 + FMA (the oldest machines it supports); kernels that also have
// an AVX-512 body compile it in files of their own (named *_avx512.cc, built with the AVX-512
// flags) and pick it here. The EP option `isa` ("ep.cpu.isa" in the session configuration:
// "avx2" or "avx512") caps the choice below what the CPU has, so tests and benchmarks run both
// bodies on an AVX-512 machine; asking for more than the CPU has is an error, not a crash.
#pragma once

#include <nxrt/nxrt_ep.hpp>
#include <string>

namespace nxrt::cpu {

enum class Isa { kAvx2 = 0, kAvx512 = 1 };

// The best this CPU and OS run: AVX-512 needs F, BW, DQ and VL (and the OS saving zmm state).
Isa DetectedIsa();

const char* IsaName(Isa isa);

// The ISA a kernel created with `info` uses: DetectedIsa(), or the session's "ep.cpu.isa"
// option when it names one the CPU has. Throws (NX_INVALID_ARGUMENT) for an unknown name or
// an ISA the CPU lacks.
Isa KernelIsa(const ep::KernelInfo& info);

// As KernelIsa, from the option's value ("" = detected).
Isa IsaFromOption(const std::string& value);

}  // namespace nxrt::cpu
