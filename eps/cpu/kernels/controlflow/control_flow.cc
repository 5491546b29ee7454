// If, Loop and Scan on the CPU EP: the runtime's kernels (NxHostApi::Create*Kernel), registered
// like any other, with the two helpers the runtime asks an EP for: stacking Loop scan outputs
// and transposing Scan inputs/outputs. The CPU EP computes in host memory, so both are plain
// byte copies; an EP with its own memory does the same work on its device.
#include <cstring>
#include <vector>

#include "kernels/all_kernels.h"

namespace nxrt::cpu {
namespace {

namespace ep = nxrt::ep;

// Bytes per element; strings and sub-byte types never reach the helpers (the runtime handles
// strings itself, and sub-byte tensors have no per-element offset).
size_t ByteSize(NxElementType type) {
  const size_t bytes = ep::ElementBytes(type, 1);
  if (type == NX_TYPE_STRING || bytes == 0 || ep::ElementBytes(type, 2) != 2 * bytes)
    ep::Fail(NX_NOT_IMPLEMENTED, "control flow helpers: no per-element size for this type");
  return bytes;
}

NxStatus* ConcatOutput(NxLoopHelper*, const NxValue* const* parts, size_t count, NxValue* out) {
  return ep::Guard([&] {
    if (count == 0) return;
    const ep::ConstTensor first(parts[0]);
    const size_t bytes = first.size() * ByteSize(first.type());
    auto* dst = static_cast<char*>(ep::Host().Value_GetData(out));
    for (size_t i = 0; i < count; ++i) {
      const ep::ConstTensor part(parts[i]);
      if (part.size() * ByteSize(part.type()) != bytes)
        ep::Fail(NX_RUNTIME_ERROR, "Loop: scan output parts differ in size");
      if (bytes) std::memcpy(dst + i * bytes, part.raw(), bytes);
    }
  });
}

NxStatus* Transpose(NxScanHelper*, const size_t* perm, size_t rank, const NxValue* input,
                    NxValue* output) {
  return ep::Guard([&] {
    const ep::ConstTensor in(input);
    const auto dims = in.shape();
    if (dims.size() != rank) ep::Fail(NX_INVALID_ARGUMENT, "Scan: transpose rank mismatch");
    const size_t es = ByteSize(in.type());
    std::vector<size_t> strides(rank, 1);
    for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * static_cast<size_t>(dims[d]);
    std::vector<size_t> out_dims(rank), index(rank, 0);
    for (size_t d = 0; d < rank; ++d) out_dims[d] = static_cast<size_t>(dims[perm[d]]);
    const auto* src = static_cast<const char*>(in.raw());
    auto* dst = static_cast<char*>(ep::Host().Value_GetData(output));
    for (size_t o = 0, n = in.size(); o < n; ++o) {
      size_t s = 0;
      for (size_t d = 0; d < rank; ++d) s += index[d] * strides[perm[d]];
      std::memcpy(dst + o * es, src + s * es, es);
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < out_dims[d]) break;
        index[d] = 0;
      }
    }
  });
}

// The helpers are stateless: one static instance each, whose Release does nothing.
// The CPU EP makes no streams, so it has no *OnStream members (ABI 13).
NxLoopHelper g_loop_helper{NXRT_EP_API_VERSION, &ConcatOutput, [](NxLoopHelper*) {}, nullptr};
// Host memory: the runtime slices and stacks Scan values itself (no SliceAxis0/ConcatOutput).
NxScanHelper g_scan_helper{NXRT_EP_API_VERSION,
                           &Transpose,
                           [](NxScanHelper*) {},
                           nullptr,
                           nullptr,
                           nullptr,
                           nullptr,
                           nullptr};

NxStatus* CreateIf(void*, const NxKernelInfo* info, NxKernel** out) {
  return ep::Host().CreateIfKernel(info, out);
}
NxStatus* CreateLoop(void*, const NxKernelInfo* info, NxKernel** out) {
  return ep::Host().CreateLoopKernel(info, &g_loop_helper, out);
}
NxStatus* CreateScan(void*, const NxKernelInfo* info, NxKernel** out) {
  return ep::Host().CreateScanKernel(info, &g_scan_helper, out);
}
NxStatus* CreateSequenceMap(void*, const NxKernelInfo* info, NxKernel** out) {
  return ep::Host().CreateSequenceMapKernel(info, out);
}

// One definition: every opset from `since`, the given host inputs and type constraints, and
// sequences/optionals accepted (bodies carry them through).
void AddDef(NxKernelRegistry* r, const char* op, int since, std::vector<int32_t> host_inputs,
            std::vector<NxTypeConstraint2> constraints, NxKernelCreateFn create) {
  std::vector<const NxTypeConstraint2*> constraint_ptrs;
  for (const NxTypeConstraint2& c : constraints) constraint_ptrs.push_back(&c);
  NxKernelDef def{};
  def.version = NXRT_EP_API_VERSION;
  def.op_type = op;
  def.domain = "";
  def.since_version_start = since;
  def.since_version_end = 0;  // and later
  def.type_constraints2 = constraint_ptrs.data();
  def.num_type_constraints2 = constraint_ptrs.size();
  def.create = create;
  def.host_inputs = host_inputs.data();
  def.num_host_inputs = host_inputs.size();
  def.value_kinds = NX_KIND_SEQUENCE | NX_KIND_OPTIONAL;
  ep::ThrowIfError(ep::Host().KernelRegistry_Add(r, &def));
}

}  // namespace

void RegisterControlFlowKernels(NxKernelRegistry* r) {
  static const NxElementType kBool[] = {NX_TYPE_BOOL};
  static const NxElementType kInt64[] = {NX_TYPE_INT64};
  static const int32_t kIn0[] = {0};
  static const int32_t kIn1[] = {1};
  constexpr uint32_t v = NXRT_EP_API_VERSION;
  AddDef(r, "If", 1, {0}, {{v, "B", kBool, 1, kIn0, 1, nullptr, 0}}, &CreateIf);
  AddDef(r, "Loop", 1, {0, 1},
         {{v, "I", kInt64, 1, kIn0, 1, nullptr, 0}, {v, "B", kBool, 1, kIn1, 1, nullptr, 0}},
         &CreateLoop);
  AddDef(r, "Scan", 8, {}, {}, &CreateScan);
  AddDef(r, "SequenceMap", 17, {}, {}, &CreateSequenceMap);
}

}  // namespace nxrt::cpu
