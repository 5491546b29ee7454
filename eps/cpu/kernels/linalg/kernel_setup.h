// Helpers for the kernel constructors of this family: what the session tells a kernel at
// creation, so plans can be built before the first run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <string>
#include <vector>

namespace nxrt::cpu::linalg {

// The session's intra-op thread count, or 0 when the session did not say.
inline int SessionThreads(const ep::KernelInfo& info) {
  std::string v = info.config("session.intra_op_num_threads", "");
  if (v.empty()) return 0;
  try {
    return std::max(1, std::stoi(v));
  } catch (...) {
    return 0;
  }
}

// The fully known static shape of input i, if any.
inline std::optional<std::vector<int64_t>> StaticInputShape(const ep::KernelInfo& info, size_t i) {
  auto shape = info.input(i).shape();
  if (!shape) return std::nullopt;
  for (int64_t d : *shape) {
    if (d < 0) return std::nullopt;
  }
  return shape;
}

}  // namespace nxrt::cpu::linalg
