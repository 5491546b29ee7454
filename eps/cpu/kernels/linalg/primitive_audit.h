// Which oneDNN implementation each primitive of a session runs, and a guard against the slow ones.
//
// oneDNN picks an implementation per primitive descriptor; when none of its optimised kernels
// accepts the problem (an activation before a fused sum, a channel tail on a blocked layout, a
// dilated pooling window) it quietly takes a reference implementation written as plain loops,
// 10-1000x slower ("ref:any"). One such fallback made a YOLO detector 140x slower than
// onnxruntime without a word. So every primitive the CPU EP creates is checked: the code that
// creates one asks IsReference and takes another formulation (another post-op chain, nxrt's own
// loop) when it is true, and records the primitive it keeps here. A reference primitive that is
// kept anyway is counted per session (the statistic "ep.CPU.reference_primitives", 0 on every
// model in CI) and reported once per node at warning level; so is a portable loop of nxrt's own
// that a kernel falls back to on a case its fast path does not take (RecordSlowLoop).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <set>
#include <string>

namespace nxrt::cpu::linalg {

// The implementation oneDNN chose, e.g. "jit:avx2", "brgconv:avx512_core", "ref:any".
std::string ImplementationName(const dnnl::primitive_desc_base& pd);
// Whether that is one of oneDNN's reference implementations ("ref:any", "ref_fused:any", ...).
bool IsReference(const dnnl::primitive_desc_base& pd);
bool IsReferenceName(const std::string& name);

// The primitives one session created (owned by the CPU EP; kernels share it). Thread-safe.
class PrimitiveAudit {
 public:
  using WarnFn = std::function<void(const std::string& message)>;
  explicit PrimitiveAudit(WarnFn warn = {}) : warn_(std::move(warn)) {}

  // A primitive the session keeps, made for node `node` to compute `what` (e.g. "convolution").
  void Record(const dnnl::primitive_desc_base& pd, const std::string& node, const char* what);
  // A portable loop of nxrt's own that node `node` runs because its fast kernel does not take
  // the case (`what` says which): counted and reported like a reference primitive.
  void RecordSlowLoop(const std::string& node, const std::string& what);

  int64_t primitives() const { return primitives_.load(std::memory_order_relaxed); }
  int64_t reference_primitives() const { return reference_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> primitives_{0}, reference_{0};
  std::mutex mu_;
  std::set<std::string> warned_;  // nodes already reported
  WarnFn warn_;
};

// Where a kernel records the primitives it creates: the session's audit and the node's name.
// Without an audit (a kernel made outside a session) nothing is recorded.
struct AuditTarget {
  std::shared_ptr<PrimitiveAudit> audit;
  std::string node;
  void Record(const dnnl::primitive_desc_base& pd, const char* what) const {
    if (audit) audit->Record(pd, node, what);
  }
  // RecordSlowLoop the first time a kernel takes its slow loop (`done` remembers it).
  void RecordSlowLoopOnce(std::atomic<bool>& done, const std::string& what) const {
    if (audit && !done.exchange(true, std::memory_order_relaxed)) audit->RecordSlowLoop(node, what);
  }
};

}  // namespace nxrt::cpu::linalg
