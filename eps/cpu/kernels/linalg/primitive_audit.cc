#include "kernels/linalg/primitive_audit.h"

namespace nxrt::cpu::linalg {

std::string ImplementationName(const dnnl::primitive_desc_base& pd) {
  const char* name = pd.impl_info_str();
  return name != nullptr ? name : "";
}

bool IsReferenceName(const std::string& name) {
  // oneDNN names its reference implementations "ref:any", "ref_fused:any", "ref_int8:any", ...
  // and "x64:ref..." style names would carry the word after a colon.
  return name.rfind("ref", 0) == 0 || name.find(":ref") != std::string::npos;
}

bool IsReference(const dnnl::primitive_desc_base& pd) {
  return IsReferenceName(ImplementationName(pd));
}

void PrimitiveAudit::Record(const dnnl::primitive_desc_base& pd, const std::string& node,
                            const char* what) {
  primitives_.fetch_add(1, std::memory_order_relaxed);
  const std::string impl = ImplementationName(pd);
  if (!IsReferenceName(impl)) return;
  reference_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!warned_.insert(node).second) return;
  }
  if (warn_) {
    warn_("CPU EP: node '" + node + "' runs a " + what + " on oneDNN's reference implementation (" +
          impl +
          "), which is many times slower than its optimised kernels; no faster "
          "formulation was found for it. Please report the model.");
  }
}

void PrimitiveAudit::RecordSlowLoop(const std::string& node, const std::string& what) {
  reference_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!warned_.insert(node).second) return;
  }
  if (warn_) {
    warn_("CPU EP: node '" + node + "' runs a portable loop (" + what +
          "), many times slower than its optimised kernel, which does not take this case. "
          "Please report the model.");
  }
}

}  // namespace nxrt::cpu::linalg
