// The host's kernel registry (behind the opaque NxKernelRegistry): kernel definitions copied
// from an EP, and the lookup that matches a node by op type, domain, opset and element types.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {

struct KernelTypeConstraint {
  std::string name;
  std::vector<NxElementType> allowed;
  std::vector<int32_t> inputs;   // -1 = all inputs
  std::vector<int32_t> outputs;  // -1 = all outputs
};

struct KernelEntry {
  std::string op_type;
  std::string domain;
  int32_t start = 1;
  int32_t end = INT32_MAX;
  std::vector<KernelTypeConstraint> constraints;
  NxKernelCreateFn create = nullptr;
  void* create_state = nullptr;
  std::vector<int32_t> host_inputs;       // delivered in host memory
  std::vector<int32_t> host_outputs;      // allocated in host memory
  std::vector<NxIoPair> aliases;          // output is input, unchanged
  std::vector<NxIoPair> may_inplace;      // output may overwrite input
  uint32_t value_kinds = NX_KIND_TENSOR;  // NX_KIND_* the kernel accepts

  bool InputOnHost(size_t i) const;
  bool OutputOnHost(size_t o) const;
  // The input output `o` aliases or may overwrite, or -1.
  int AliasInput(size_t o) const;
  int InplaceInput(size_t o) const;

  // Whether an input a type constraint covers has no static type in `node` (the model did not
  // declare it and inference could not tell): its type is then checked at every run.
  bool NeedsRunTimeTypeCheck(const Node& node) const;
  // Whether the run-time types of `inputs` (null = omitted) meet the type constraints, which the
  // kernel was created for; false with the reason ("input 1 has type uint8, not allowed for T").
  bool AcceptsRunTimeTypes(const Value* const* inputs, size_t num_inputs,
                           std::string* reason) const;

  // The definition as the ABI describes it, pointing into this entry (for FindKernel), with
  // every list in both its forms (version 14 added the versioned ones).
  NxKernelDef abi{};
  std::vector<NxTypeConstraint> abi_constraints;
  std::vector<NxTypeConstraint2> abi_constraints2;
  std::vector<NxIoPair2> abi_aliases2;
  std::vector<NxIoPair2> abi_may_inplace2;
  std::vector<const NxTypeConstraint2*> abi_constraint2_ptrs;
  std::vector<const NxIoPair2*> abi_alias2_ptrs;
  std::vector<const NxIoPair2*> abi_may_inplace2_ptrs;
};

// Why Find found no kernel (for placement reports).
enum class LookupFailure { kNone, kNoOp, kOpset, kType };

class KernelRegistry {
 public:
  // Copies `def`; throws NX_INVALID_ARGUMENT for an incomplete definition.
  void Add(const NxKernelDef& def);

  // The kernel for `node`, or nullptr with a reason ("no kernel for op X in domain Y",
  // "opset 9 outside the registered ranges 13-...", "input 0 has type int8, not allowed for T").
  // `failure` (optional) says which of the three it was.
  const KernelEntry* Find(const Node& node, std::string* reason,
                          LookupFailure* failure = nullptr) const;

  size_t size() const { return entries_.size(); }

 private:
  std::deque<KernelEntry> entries_;  // a deque: entries never move, FindKernel hands out pointers
  std::unordered_map<std::string, std::vector<size_t>> by_op_;  // "domain:op" -> entries
};

}  // namespace nxrt

// The ABI handle is the registry itself.
struct NxKernelRegistry : nxrt::KernelRegistry {};
