#include "common/cpu_features.h"

namespace nxrt::cpu {

Isa DetectedIsa() {
  // libgcc's CPUID reading also checks that the OS saves the zmm and mask registers (XCR0).
  static const Isa isa = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                 __builtin_cpu_supports("avx512dq") &&
                                 __builtin_cpu_supports("avx512vl")
                             ? Isa::kAvx512
                             : Isa::kAvx2;
  return isa;
}

const char* IsaName(Isa isa) { return isa == Isa::kAvx512 ? "avx512" : "avx2"; }

Isa IsaFromOption(const std::string& value) {
  if (value.empty()) return DetectedIsa();
  Isa wanted;
  if (value == "avx2") {
    wanted = Isa::kAvx2;
  } else if (value == "avx512") {
    wanted = Isa::kAvx512;
  } else {
    ep::Fail(NX_INVALID_ARGUMENT, "CPU EP option isa='" + value + "' is not one of avx2, avx512");
  }
  if (static_cast<int>(wanted) > static_cast<int>(DetectedIsa())) {
    ep::Fail(NX_INVALID_ARGUMENT,
             "CPU EP option isa='" + value + "': this CPU only has " + IsaName(DetectedIsa()));
  }
  return wanted;
}

Isa KernelIsa(const ep::KernelInfo& info) { return IsaFromOption(info.config("ep.cpu.isa", "")); }

}  // namespace nxrt::cpu
