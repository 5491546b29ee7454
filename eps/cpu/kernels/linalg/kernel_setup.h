// Helpers for the kernel constructors of this family: what the session tells a kernel at
// creation, so plans can be built before the first run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernels/linalg/primitive_audit.h"

namespace nxrt::cpu {
// The audit of the session the CPU EP `ep` serves (cpu_ep.cc); null for another EP.
std::shared_ptr<linalg::PrimitiveAudit> SessionAudit(const NxEp* ep);
}  // namespace nxrt::cpu

namespace nxrt::cpu::linalg {

// Where a kernel records the oneDNN primitives it creates: its session's audit, under its name.
inline AuditTarget KernelAudit(const ep::KernelInfo& info) {
  const std::string name = info.name();
  return {SessionAudit(info.ep()), name.empty() ? "(unnamed " + info.op_type() + ")" : name};
}

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
