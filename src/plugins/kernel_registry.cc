#include "plugins/kernel_registry.h"

#include "base/element_type.h"
#include "base/error.h"

namespace nxrt {
namespace {

std::string Key(const std::string& domain, const std::string& op) { return domain + ":" + op; }

std::string NormalizeDomain(const char* domain) {
  std::string d = domain ? domain : "";
  return d == "ai.onnx" ? std::string() : d;
}

// Checks one constraint against the types `type_of(is_output, index)` reports (UNDEFINED for an
// omitted or unknown value: those pass, they can only be checked at run time). `outputs`: also
// check the outputs (statically; at run time only inputs exist yet).
template <class TypeOf>
bool SatisfiesTypes(const KernelTypeConstraint& c, size_t num_inputs, size_t num_outputs,
                    TypeOf&& type_of, std::string* reason) {
  // A type variable binds to one type: every value it constrains must have the same one (a
  // float x plus an int64 y is not an Add any kernel can run).
  NxElementType bound = NX_TYPE_UNDEFINED;
  std::string bound_at;
  auto check = [&](bool is_output, size_t count, const std::vector<int32_t>& indices,
                   const char* what) {
    for (int32_t idx : indices) {
      size_t begin = idx < 0 ? 0 : static_cast<size_t>(idx);
      size_t end = idx < 0 ? count : std::min(count, begin + 1);
      for (size_t i = begin; i < end; ++i) {
        NxElementType t = type_of(is_output, i);
        if (t == NX_TYPE_UNDEFINED) continue;
        bool ok = false;
        for (NxElementType a : c.allowed) ok = ok || a == t;
        if (!ok) {
          if (reason) {
            *reason = std::string(what) + " " + std::to_string(i) + " has type " +
                      ElementTypeName(t) + ", not allowed for constraint " + c.name;
          }
          return false;
        }
        const std::string here = std::string(what) + " " + std::to_string(i);
        if (bound == NX_TYPE_UNDEFINED) {
          bound = t;
          bound_at = here;
        } else if (t != bound) {
          if (reason) {
            *reason = here + " has type " + ElementTypeName(t) + " but " + bound_at + " has " +
                      ElementTypeName(bound) + " (both are " + c.name + ")";
          }
          return false;
        }
      }
    }
    return true;
  };
  return check(false, num_inputs, c.inputs, "input") &&
         check(true, num_outputs, c.outputs, "output");
}

// Checks one constraint against the node's declared types.
bool Satisfies(const KernelTypeConstraint& c, const Node& node, std::string* reason) {
  auto type_of = [&](bool is_output, size_t i) {
    const int v = is_output ? node.outputs[i] : node.inputs[i];
    return v < 0 ? NX_TYPE_UNDEFINED : node.owner->value(v).type.elem_type;
  };
  return SatisfiesTypes(c, node.inputs.size(), node.outputs.size(), type_of, reason);
}

}  // namespace

void KernelRegistry::Add(const NxKernelDef& def) {
  NXRT_CHECK(def.version >= 1, NX_INVALID_ARGUMENT, "kernel definition has version 0");
  NXRT_CHECK(def.op_type != nullptr && def.op_type[0] != '\0', NX_INVALID_ARGUMENT,
             "kernel definition has no op type");
  NXRT_CHECK(def.create != nullptr, NX_INVALID_ARGUMENT,
             std::string("kernel definition for ") + def.op_type + " has no create function");
  KernelEntry e;
  e.op_type = def.op_type;
  e.domain = NormalizeDomain(def.domain);
  e.start = def.since_version_start;
  e.end = def.since_version_end <= 0 ? INT32_MAX : def.since_version_end;
  NXRT_CHECK(e.start <= e.end, NX_INVALID_ARGUMENT,
             "kernel definition for " + e.op_type + " has an empty version range");
  auto add_constraint = [&](const auto& c) {
    NXRT_CHECK(c.num_allowed_types == 0 || c.allowed_types != nullptr, NX_INVALID_ARGUMENT,
               "kernel definition for " + e.op_type + ": a type constraint's types are null");
    NXRT_CHECK(c.num_input_indices == 0 || c.input_indices != nullptr, NX_INVALID_ARGUMENT,
               "kernel definition for " + e.op_type + ": a type constraint's inputs are null");
    NXRT_CHECK(c.num_output_indices == 0 || c.output_indices != nullptr, NX_INVALID_ARGUMENT,
               "kernel definition for " + e.op_type + ": a type constraint's outputs are null");
    KernelTypeConstraint kc;
    kc.name = c.name ? c.name : "";
    kc.allowed.assign(c.allowed_types, c.allowed_types + c.num_allowed_types);
    kc.inputs.assign(c.input_indices, c.input_indices + c.num_input_indices);
    kc.outputs.assign(c.output_indices, c.output_indices + c.num_output_indices);
    e.constraints.push_back(std::move(kc));
  };
  NXRT_CHECK(def.num_type_constraints == 0 || def.type_constraints != nullptr, NX_INVALID_ARGUMENT,
             "kernel definition for " + e.op_type + ": type_constraints is null");
  for (size_t i = 0; i < def.num_type_constraints; ++i) add_constraint(def.type_constraints[i]);
  // Version 14 entries are read through their pointers, each checked for its own version.
  auto versioned = [&](const auto* const* p, size_t n, const char* what) {
    NXRT_CHECK(n == 0 || p != nullptr, NX_INVALID_ARGUMENT,
               "kernel definition for " + e.op_type + ": " + what + " is null");
    for (size_t i = 0; i < n; ++i) {
      NXRT_CHECK(p[i] != nullptr, NX_INVALID_ARGUMENT,
                 "kernel definition for " + e.op_type + ": entry " + std::to_string(i) + " of " +
                     what + " is null");
      NXRT_CHECK(p[i]->version >= 14, NX_INVALID_ARGUMENT,
                 "kernel definition for " + e.op_type + ": entry " + std::to_string(i) + " of " +
                     what + " has version " + std::to_string(p[i]->version) +
                     " (versioned entries start at 14)");
    }
  };
  if (def.version >= 14) {
    versioned(def.type_constraints2, def.num_type_constraints2, "type_constraints2");
    for (size_t i = 0; i < def.num_type_constraints2; ++i)
      add_constraint(*def.type_constraints2[i]);
  }
  e.create = def.create;
  e.create_state = def.create_state;
  if (def.version >= 2) {
    auto indices = [&](const int32_t* p, size_t n, const char* what) {
      NXRT_CHECK(n == 0 || p != nullptr, NX_INVALID_ARGUMENT,
                 "kernel definition for " + e.op_type + ": " + what + " is null");
      for (size_t i = 0; i < n; ++i) {
        NXRT_CHECK(p[i] >= 0, NX_INVALID_ARGUMENT,
                   "kernel definition for " + e.op_type + ": negative index in " + what);
      }
      return std::vector<int32_t>(p, p + n);
    };
    auto pairs = [&](const NxIoPair* p, size_t n, const char* what) {
      NXRT_CHECK(n == 0 || p != nullptr, NX_INVALID_ARGUMENT,
                 "kernel definition for " + e.op_type + ": " + what + " is null");
      std::vector<NxIoPair> out(p, p + n);
      for (const NxIoPair& io : out) {
        NXRT_CHECK(io.input >= 0 && io.output >= 0, NX_INVALID_ARGUMENT,
                   "kernel definition for " + e.op_type + ": negative index in " + what);
      }
      return out;
    };
    e.host_inputs = indices(def.host_inputs, def.num_host_inputs, "host_inputs");
    e.host_outputs = indices(def.host_outputs, def.num_host_outputs, "host_outputs");
    e.aliases = pairs(def.aliases, def.num_aliases, "aliases");
    e.may_inplace = pairs(def.may_inplace, def.num_may_inplace, "may_inplace");
  }
  if (def.version >= 14) {
    auto pairs2 = [&](const NxIoPair2* const* p, size_t n, const char* what,
                      std::vector<NxIoPair>& out) {
      versioned(p, n, what);
      for (size_t i = 0; i < n; ++i) {
        NXRT_CHECK(p[i]->input >= 0 && p[i]->output >= 0, NX_INVALID_ARGUMENT,
                   "kernel definition for " + e.op_type + ": negative index in " + what);
        out.push_back({p[i]->input, p[i]->output});
      }
    };
    pairs2(def.aliases2, def.num_aliases2, "aliases2", e.aliases);
    pairs2(def.may_inplace2, def.num_may_inplace2, "may_inplace2", e.may_inplace);
  }
  if (def.version >= 4) e.value_kinds = def.value_kinds | NX_KIND_TENSOR;
  by_op_[Key(e.domain, e.op_type)].push_back(entries_.size());
  KernelEntry& stored = entries_.emplace_back(std::move(e));
  // The ABI view, pointing into the stored entry (its address never changes).
  // Both forms hold every entry (version 14): a reader of either sees the whole definition.
  for (const KernelTypeConstraint& c : stored.constraints) {
    stored.abi_constraints.push_back({c.name.c_str(), c.allowed.data(), c.allowed.size(),
                                      c.inputs.data(), c.inputs.size(), c.outputs.data(),
                                      c.outputs.size()});
    stored.abi_constraints2.push_back({NXRT_EP_API_VERSION, c.name.c_str(), c.allowed.data(),
                                       c.allowed.size(), c.inputs.data(), c.inputs.size(),
                                       c.outputs.data(), c.outputs.size()});
  }
  for (const NxIoPair& io : stored.aliases)
    stored.abi_aliases2.push_back({NXRT_EP_API_VERSION, io.input, io.output});
  for (const NxIoPair& io : stored.may_inplace)
    stored.abi_may_inplace2.push_back({NXRT_EP_API_VERSION, io.input, io.output});
  auto pointers = [](const auto& entries, auto& out) {
    for (const auto& x : entries) out.push_back(&x);
  };
  pointers(stored.abi_constraints2, stored.abi_constraint2_ptrs);
  pointers(stored.abi_aliases2, stored.abi_alias2_ptrs);
  pointers(stored.abi_may_inplace2, stored.abi_may_inplace2_ptrs);
  NxKernelDef& a = stored.abi;
  a.version = NXRT_EP_API_VERSION;
  a.op_type = stored.op_type.c_str();
  a.domain = stored.domain.c_str();
  a.since_version_start = stored.start;
  a.since_version_end = stored.end;
  a.type_constraints = stored.abi_constraints.data();
  a.num_type_constraints = stored.abi_constraints.size();
  a.create = stored.create;
  a.create_state = stored.create_state;
  a.host_inputs = stored.host_inputs.data();
  a.num_host_inputs = stored.host_inputs.size();
  a.host_outputs = stored.host_outputs.data();
  a.num_host_outputs = stored.host_outputs.size();
  a.aliases = stored.aliases.data();
  a.num_aliases = stored.aliases.size();
  a.may_inplace = stored.may_inplace.data();
  a.num_may_inplace = stored.may_inplace.size();
  a.value_kinds = stored.value_kinds;
  a.type_constraints2 = stored.abi_constraint2_ptrs.data();
  a.num_type_constraints2 = stored.abi_constraint2_ptrs.size();
  a.aliases2 = stored.abi_alias2_ptrs.data();
  a.num_aliases2 = stored.abi_alias2_ptrs.size();
  a.may_inplace2 = stored.abi_may_inplace2_ptrs.data();
  a.num_may_inplace2 = stored.abi_may_inplace2_ptrs.size();
}

bool KernelEntry::InputOnHost(size_t i) const {
  for (int32_t h : host_inputs)
    if (static_cast<size_t>(h) == i) return true;
  return false;
}

bool KernelEntry::OutputOnHost(size_t o) const {
  for (int32_t h : host_outputs)
    if (static_cast<size_t>(h) == o) return true;
  return false;
}

int KernelEntry::AliasInput(size_t o) const {
  for (const NxIoPair& io : aliases)
    if (static_cast<size_t>(io.output) == o) return io.input;
  return -1;
}

int KernelEntry::InplaceInput(size_t o) const {
  for (const NxIoPair& io : may_inplace)
    if (static_cast<size_t>(io.output) == o) return io.input;
  return -1;
}

// Whether `e` takes the value kinds the node's inputs and outputs statically have.
static bool AcceptsKinds(const KernelEntry& e, const Node& node, std::string* reason) {
  auto check = [&](const std::vector<int>& values, const char* what) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] < 0) continue;
      const NxValueKind kind = node.owner->value(values[i]).type.kind;
      const uint32_t bit = kind == NX_VALUE_SEQUENCE   ? NX_KIND_SEQUENCE
                           : kind == NX_VALUE_OPTIONAL ? NX_KIND_OPTIONAL
                                                       : NX_KIND_TENSOR;
      if ((e.value_kinds & bit) == 0) {
        if (reason) {
          *reason = std::string(what) + " " + std::to_string(i) + " is " +
                    (kind == NX_VALUE_SEQUENCE ? "a sequence" : "an optional") +
                    " and the kernel takes tensors only";
        }
        return false;
      }
    }
    return true;
  };
  return check(node.inputs, "input") && check(node.outputs, "output");
}

const KernelEntry* KernelRegistry::Find(const Node& node, std::string* reason,
                                        LookupFailure* failure) const {
  if (failure) *failure = LookupFailure::kNone;
  auto it = by_op_.find(Key(node.domain, node.op_type));
  if (it == by_op_.end()) {
    if (failure) *failure = LookupFailure::kNoOp;
    if (reason) {
      *reason = "no kernel for op " + node.op_type +
                (node.domain.empty() ? "" : " in domain '" + node.domain + "'");
    }
    return nullptr;
  }
  std::string ranges;
  std::string type_reason;
  for (size_t idx : it->second) {
    const KernelEntry& e = entries_[idx];
    if (node.opset < e.start || node.opset > e.end) {
      ranges += (ranges.empty() ? "" : ", ") + std::to_string(e.start) + "-" +
                (e.end == INT32_MAX ? std::string("") : std::to_string(e.end));
      continue;
    }
    bool ok = AcceptsKinds(e, node, &type_reason);
    for (const auto& c : e.constraints) {
      if (!ok) break;
      if (!Satisfies(c, node, &type_reason)) {
        ok = false;
        break;
      }
    }
    if (ok) return &e;
  }
  if (failure) *failure = type_reason.empty() ? LookupFailure::kOpset : LookupFailure::kType;
  if (reason) {
    if (!type_reason.empty())
      *reason = "type constraint not met: " + type_reason;
    else
      *reason = "no kernel for " + node.op_type + " at opset " + std::to_string(node.opset) +
                " (registered versions: " + ranges + ")";
  }
  return nullptr;
}

bool KernelEntry::NeedsRunTimeTypeCheck(const Node& node) const {
  for (const auto& c : constraints) {
    for (int32_t idx : c.inputs) {
      size_t begin = idx < 0 ? 0 : static_cast<size_t>(idx);
      size_t end = idx < 0 ? node.inputs.size() : std::min(node.inputs.size(), begin + 1);
      for (size_t i = begin; i < end; ++i) {
        const int v = node.inputs[i];
        if (v >= 0 && node.owner->value(v).type.elem_type == NX_TYPE_UNDEFINED) return true;
      }
    }
  }
  return false;
}

bool KernelEntry::AcceptsRunTimeTypes(const Value* const* inputs, size_t num_inputs,
                                      std::string* reason) const {
  auto type_of = [&](bool, size_t i) {
    const Value* v = inputs[i];
    return v == nullptr || v->kind != NX_VALUE_TENSOR ? NX_TYPE_UNDEFINED : v->type;
  };
  for (const auto& c : constraints)
    if (!SatisfiesTypes(c, num_inputs, 0, type_of, reason)) return false;
  return true;
}

}  // namespace nxrt
