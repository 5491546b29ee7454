// Scan: run the body once per slice of the scan inputs, carrying state, and stack the per-slice
// outputs. Opset 8 (a batch axis and optional sequence lengths) and opset 9 on (any scan axis,
// per-input directions).
#include <cstring>

#include "base/element_type.h"
#include "base/error.h"
#include "base/memory_info.h"
#include "controlflow/body_runner.h"
#include "controlflow/control_flow.h"
#include "plugins/host_objects.h"

namespace nxrt {
namespace {

std::vector<int64_t> IntsAttribute(const Node& node, const char* name, size_t count,
                                   int64_t fallback) {
  const Attribute* a = node.FindAttribute(name);
  if (a == nullptr) return std::vector<int64_t>(count, fallback);
  NXRT_CHECK(a->ints.size() == count, NX_INVALID_MODEL,
             node.Describe() + ": attribute '" + name + "' needs " + std::to_string(count) +
                 " values, has " + std::to_string(a->ints.size()));
  return a->ints;
}

// Stacks tensors of one type and shape along a new first axis (host memory).
ValuePtr StackHost(const std::vector<ValuePtr>& parts, const Node& node) {
  const Value& first = *parts.at(0);
  std::vector<int64_t> dims{static_cast<int64_t>(parts.size())};
  dims.insert(dims.end(), first.dims.begin(), first.dims.end());
  ValuePtr out = MakeTensor(first.type, dims);
  for (size_t i = 0; i < parts.size(); ++i) {
    const Value& p = *parts[i];
    NXRT_CHECK(p.kind == NX_VALUE_TENSOR && p.type == first.type && p.dims == first.dims &&
                   IsHostReadable(p),
               NX_RUNTIME_ERROR,
               node.Describe() + ": per-iteration outputs differ (" + DescribeTensor(first) +
                   " then " + DescribeTensor(p) + ")");
    if (p.type == NX_TYPE_STRING) {
      for (size_t e = 0; e < p.count; ++e) out->strings[i * p.count + e] = p.strings[e];
    } else if (TensorBytes(p)) {
      std::memcpy(static_cast<char*>(out->data) + i * TensorBytes(p), p.data, TensorBytes(p));
    }
  }
  return out;
}

int64_t NormalizeAxis(int64_t axis, size_t rank, const Node& node) {
  const int64_t r = static_cast<int64_t>(rank);
  NXRT_CHECK(axis >= -r && axis < r, NX_INVALID_ARGUMENT,
             node.Describe() + ": scan axis " + std::to_string(axis) +
                 " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

struct ScanKernel {
  NxKernel base{};
  std::unique_ptr<BodyRunner> body;
  NxScanHelper* helper = nullptr;
  int opset = 9;
  const NxMemoryInfo* memory = nullptr;  // the kernel's memory: where its outputs go

  ~ScanKernel() {
    if (helper != nullptr) helper->Release(helper);
  }

  // `perm` applied to `input` (the EP's helper, or on the host).
  ValuePtr Transpose(const NxKernelContext& ctx, const Value& input,
                     const std::vector<size_t>& perm) const {
    const Node& node = *ctx.node;
    std::vector<int64_t> dims;
    for (size_t p : perm) dims.push_back(input.dims[p]);
    ValuePtr out = AllocateLike(ctx, input, input.type, dims);
    if (helper != nullptr && input.type != NX_TYPE_STRING) {
      if (NxStream* stream =
              StreamOf(ctx, helper->version >= 13 && helper->TransposeOnStream != nullptr)) {
        ThrowIfStatus(
            helper->TransposeOnStream(helper, perm.data(), perm.size(), &input, out.get(), stream),
            node.Describe() + ": the EP's TransposeOnStream failed");
        Synchronize(ctx, stream);  // the body or the caller reads it next
        return out;
      }
      ThrowIfStatus(helper->Transpose(helper, perm.data(), perm.size(), &input, out.get()),
                    node.Describe() + ": the EP's Transpose failed");
    } else {
      NXRT_CHECK(IsHostReadable(input), NX_NOT_IMPLEMENTED,
                 node.Describe() + ": scan axes in device memory need the EP's Transpose");
      TransposeHost(input, perm, *out);
    }
    return out;
  }

  // The node's stream for a helper call, when the helper has the *OnStream member (ABI 13).
  NxStream* StreamOf(const NxKernelContext& ctx, bool has_member) const {
    return ctx.stream != nullptr && has_member ? ctx.stream : nullptr;
  }
  // Waits for what a helper queued (a slice or transpose the body reads next).
  static void Synchronize(const NxKernelContext& ctx, NxStream* stream) {
    ThrowIfStatus(stream->Synchronize(stream), ctx.node->Describe() + ": its stream failed");
  }

  // The version-5 helpers, when the EP gave them.
  bool CanSlice() const { return helper != nullptr && helper->version >= 5 && helper->SliceAxis0; }
  bool CanConcat() const {
    return helper != nullptr && helper->version >= 5 && helper->ConcatOutput;
  }

  // src[i] along axis 0: on the host, or by the EP in its memory.
  ValuePtr Slice(const NxKernelContext& ctx, const Value& src, int64_t i) const {
    if (IsHostReadable(src) || src.type == NX_TYPE_STRING) return SliceAxis0(src, i);
    const Node& node = *ctx.node;
    NXRT_CHECK(CanSlice(), NX_NOT_IMPLEMENTED,
               node.Describe() + ": scan inputs in device memory need the EP's SliceAxis0 helper");
    NXRT_CHECK(!src.dims.empty(), NX_RUNTIME_ERROR, node.Describe() + ": cannot slice a scalar");
    std::vector<int64_t> dims(src.dims.begin() + 1, src.dims.end());
    ValuePtr out = AllocateLike(ctx, src, src.type, dims);
    if (NxStream* stream =
            StreamOf(ctx, helper->version >= 13 && helper->SliceAxis0OnStream != nullptr)) {
      ThrowIfStatus(helper->SliceAxis0OnStream(helper, &src, i, out.get(), stream),
                    node.Describe() + ": the EP's SliceAxis0OnStream failed");
      Synchronize(ctx, stream);  // the body reads it next
      return out;
    }
    ThrowIfStatus(helper->SliceAxis0(helper, &src, i, out.get()),
                  node.Describe() + ": the EP's SliceAxis0 failed");
    return out;
  }

  // Tensors of one type and shape stacked along a new first axis: on the host, or by the EP.
  ValuePtr Stack(const NxKernelContext& ctx, const std::vector<ValuePtr>& parts) const {
    const Node& node = *ctx.node;
    const Value& first = *parts.at(0);
    if (IsHostReadable(first) || first.type == NX_TYPE_STRING) return StackHost(parts, node);
    NXRT_CHECK(
        CanConcat(), NX_NOT_IMPLEMENTED,
        node.Describe() + ": scan outputs in device memory need the EP's ConcatOutput helper");
    std::vector<const NxValue*> raw;
    for (const ValuePtr& p : parts) {
      NXRT_CHECK(p->kind == NX_VALUE_TENSOR && p->type == first.type && p->dims == first.dims &&
                     SameMemory(MemoryOf(*p), MemoryOf(first)),
                 NX_RUNTIME_ERROR,
                 node.Describe() + ": per-iteration outputs differ (" + DescribeTensor(first) +
                     " then " + DescribeTensor(*p) + ")");
      raw.push_back(p.get());
    }
    std::vector<int64_t> dims{static_cast<int64_t>(parts.size())};
    dims.insert(dims.end(), first.dims.begin(), first.dims.end());
    ValuePtr out = AllocateLike(ctx, first, first.type, dims);
    if (NxStream* stream =
            StreamOf(ctx, helper->version >= 13 && helper->ConcatOutputOnStream != nullptr)) {
      // Queued: the parts stay alive until the run synchronises; later helper calls on the
      // same stream come after it.
      ThrowIfStatus(helper->ConcatOutputOnStream(helper, raw.data(), raw.size(), out.get(), stream),
                    node.Describe() + ": the EP's ConcatOutputOnStream failed");
      ctx.keep_alive.insert(ctx.keep_alive.end(), parts.begin(), parts.end());
      return out;
    }
    ThrowIfStatus(helper->ConcatOutput(helper, raw.data(), raw.size(), out.get()),
                  node.Describe() + ": the EP's ConcatOutput failed");
    return out;
  }

  // Runs the body over `seq_len` slices. `scan_inputs` have the scan axis first.
  void RunSlices(const NxKernelContext& ctx, std::vector<const Value*> states,
                 const std::vector<const Value*>& scan_inputs, const std::vector<int64_t>& dirs,
                 int64_t seq_len, std::vector<ValuePtr>& final_states,
                 std::vector<std::vector<ValuePtr>>& scan_outputs) const {
    const Node& node = *ctx.node;
    const size_t n = states.size();
    const size_t k_out = body->num_outputs() - n;
    scan_outputs.assign(k_out, {});
    std::vector<ValuePtr> hold;
    std::vector<const Value*> feeds(n + scan_inputs.size());
    // States and per-slice outputs stay in the kernel's memory between slices.
    std::vector<const NxMemoryInfo*> deliver(n + k_out);
    for (size_t o = 0; o < deliver.size(); ++o) deliver[o] = OutputMemory(ctx, o, memory);
    for (int64_t t = 0; t < seq_len; ++t) {
      if (ctx.run_control != nullptr && ctx.run_control->ShouldStop())
        ctx.run_control->ThrowIfStopped(node.Describe() + ", iteration " + std::to_string(t));
      std::vector<ValuePtr> slices;
      for (size_t j = 0; j < scan_inputs.size(); ++j)
        slices.push_back(Slice(ctx, *scan_inputs[j], dirs[j] ? seq_len - 1 - t : t));
      for (size_t s = 0; s < n; ++s) feeds[s] = states[s];
      for (size_t j = 0; j < slices.size(); ++j) feeds[n + j] = slices[j].get();
      std::vector<ValuePtr> out;
      try {
        out = body->Run(feeds, ctx, deliver);
      } catch (const Error& e) {
        Throw(e.code(), node.Describe() + ": iteration " + std::to_string(t) + ": " + e.what());
      }
      hold.assign(out.begin(), out.begin() + static_cast<ptrdiff_t>(n));
      for (size_t s = 0; s < n; ++s) states[s] = hold[s].get();
      for (size_t k = 0; k < k_out; ++k) scan_outputs[k].push_back(std::move(out[n + k]));
    }
    final_states.clear();
    for (size_t s = 0; s < n; ++s) {
      if (!hold.empty()) {
        final_states.push_back(hold[s]);
      } else {  // no slice: the initial state passes through (copied: the caller owns it)
        final_states.push_back(body->CopyTo(*states[s], deliver[s]));
      }
    }
  }

  void Compute(NxKernelContext& ctx) const {
    if (opset < 9)
      Compute8(ctx);
    else
      Compute9(ctx);
  }

  void Compute9(NxKernelContext& ctx) const {
    const Node& node = *ctx.node;
    const Attribute* m_attr = node.FindAttribute("num_scan_inputs");
    NXRT_CHECK(m_attr != nullptr, NX_INVALID_MODEL, node.Describe() + ": needs num_scan_inputs");
    const size_t m = static_cast<size_t>(m_attr->i);
    NXRT_CHECK(m <= ctx.num_inputs, NX_INVALID_MODEL, node.Describe() + ": too many scan inputs");
    const size_t n = ctx.num_inputs - m;
    NXRT_CHECK(body->num_inputs() == n + m && body->num_outputs() >= n, NX_INVALID_MODEL,
               node.Describe() + ": the body's inputs/outputs do not match the node");
    const size_t k_out = body->num_outputs() - n;
    const auto in_dirs = IntsAttribute(node, "scan_input_directions", m, 0);
    const auto in_axes = IntsAttribute(node, "scan_input_axes", m, 0);
    const auto out_dirs = IntsAttribute(node, "scan_output_directions", k_out, 0);
    const auto out_axes = IntsAttribute(node, "scan_output_axes", k_out, 0);

    std::vector<ValuePtr> moved;  // scan inputs with the scan axis first
    std::vector<const Value*> scan_inputs;
    int64_t seq_len = -1;
    for (size_t j = 0; j < m; ++j) {
      const Value* in = ctx.inputs[n + j];
      NXRT_CHECK(
          in != nullptr && in->kind == NX_VALUE_TENSOR && !in->dims.empty(), NX_INVALID_ARGUMENT,
          node.Describe() + ": scan input " + std::to_string(j) + " must be a tensor of rank >= 1");
      const size_t axis = static_cast<size_t>(NormalizeAxis(in_axes[j], in->dims.size(), node));
      const int64_t len = in->dims[axis];
      NXRT_CHECK(seq_len < 0 || len == seq_len, NX_INVALID_ARGUMENT,
                 node.Describe() + ": scan inputs have different lengths (" +
                     std::to_string(seq_len) + " and " + std::to_string(len) + ")");
      seq_len = len;
      if (axis == 0) {
        scan_inputs.push_back(in);
        continue;
      }
      std::vector<size_t> perm{axis};
      for (size_t d = 0; d < in->dims.size(); ++d)
        if (d != axis) perm.push_back(d);
      moved.push_back(Transpose(ctx, *in, perm));
      scan_inputs.push_back(moved.back().get());
    }
    if (seq_len < 0) seq_len = 0;
    std::vector<const Value*> states(ctx.inputs, ctx.inputs + n);
    std::vector<ValuePtr> final_states;
    std::vector<std::vector<ValuePtr>> outs;
    RunSlices(ctx, states, scan_inputs, in_dirs, seq_len, final_states, outs);
    for (size_t s = 0; s < n; ++s) ctx.outputs[s] = final_states[s];
    for (size_t k = 0; k < k_out; ++k) {
      NXRT_CHECK(!outs[k].empty(), NX_NOT_IMPLEMENTED,
                 node.Describe() + ": a scan over zero slices has no output shape");
      if (out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
      ValuePtr stacked = Stack(ctx, outs[k]);
      const size_t rank = stacked->dims.size();
      const size_t axis = static_cast<size_t>(NormalizeAxis(out_axes[k], rank, node));
      if (axis != 0) {
        // The stacked axis 0 moves to `axis`.
        std::vector<size_t> perm;
        for (size_t d = 1; d <= axis; ++d) perm.push_back(d);
        perm.push_back(0);
        for (size_t d = axis + 1; d < rank; ++d) perm.push_back(d);
        stacked = Transpose(ctx, *stacked, perm);
      }
      ctx.outputs[n + k] = stacked;
    }
  }

  // Opset 8: input 0 is optional sequence lengths; states and scan inputs carry a batch axis;
  // each batch entry is an independent scan along axis 1.
  void Compute8(NxKernelContext& ctx) const {
    const Node& node = *ctx.node;
    const Attribute* m_attr = node.FindAttribute("num_scan_inputs");
    NXRT_CHECK(m_attr != nullptr, NX_INVALID_MODEL, node.Describe() + ": needs num_scan_inputs");
    const size_t m = static_cast<size_t>(m_attr->i);
    NXRT_CHECK(ctx.num_inputs >= 1 + m, NX_INVALID_MODEL, node.Describe() + ": too few inputs");
    const size_t n = ctx.num_inputs - 1 - m;
    const size_t k_out = body->num_outputs() - n;
    const auto dirs = IntsAttribute(node, "directions", m, 0);
    NXRT_CHECK(m > 0 || n > 0, NX_INVALID_MODEL, node.Describe() + ": nothing to scan");
    const Value* first = ctx.inputs[1];
    NXRT_CHECK(first != nullptr && !first->dims.empty(), NX_INVALID_ARGUMENT,
               node.Describe() + ": inputs need a batch axis");
    const int64_t batch = first->dims[0];
    std::vector<std::vector<ValuePtr>> state_parts(n), out_parts(k_out);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<ValuePtr> hold;
      std::vector<const Value*> states, scans;
      for (size_t s = 0; s < n; ++s) {
        hold.push_back(Slice(ctx, *ctx.inputs[1 + s], b));
        states.push_back(hold.back().get());
      }
      int64_t seq_len = -1;
      for (size_t j = 0; j < m; ++j) {
        hold.push_back(Slice(ctx, *ctx.inputs[1 + n + j], b));
        scans.push_back(hold.back().get());
        NXRT_CHECK(!hold.back()->dims.empty(), NX_INVALID_ARGUMENT,
                   node.Describe() + ": scan inputs need [batch, sequence, ...]");
        seq_len = hold.back()->dims[0];
      }
      if (const Value* lens = ctx.inputs[0]) {
        NXRT_CHECK(lens->type == NX_TYPE_INT64 && lens->count == static_cast<size_t>(batch),
                   NX_INVALID_ARGUMENT, node.Describe() + ": sequence_lens must be int64[batch]");
        NXRT_CHECK(IsHostReadable(*lens), NX_INVALID_ARGUMENT,
                   node.Describe() + ": sequence_lens must be a host input of the kernel");
        const int64_t len = static_cast<const int64_t*>(lens->data)[b];
        NXRT_CHECK(len == seq_len, NX_NOT_IMPLEMENTED,
                   node.Describe() +
                       ": sequence lengths shorter than the scan axis are not "
                       "supported");
      }
      std::vector<ValuePtr> final_states;
      std::vector<std::vector<ValuePtr>> outs;
      RunSlices(ctx, states, scans, dirs, std::max<int64_t>(seq_len, 0), final_states, outs);
      for (size_t s = 0; s < n; ++s) state_parts[s].push_back(final_states[s]);
      for (size_t k = 0; k < k_out; ++k) {
        NXRT_CHECK(!outs[k].empty(), NX_NOT_IMPLEMENTED,
                   node.Describe() + ": a scan over zero slices has no output shape");
        out_parts[k].push_back(Stack(ctx, outs[k]));
      }
    }
    NXRT_CHECK(batch > 0, NX_NOT_IMPLEMENTED, node.Describe() + ": an empty batch");
    for (size_t s = 0; s < n; ++s) ctx.outputs[s] = Stack(ctx, state_parts[s]);
    for (size_t k = 0; k < k_out; ++k) ctx.outputs[n + k] = Stack(ctx, out_parts[k]);
  }
};

}  // namespace

NxStatus* CreateScanKernel(const NxKernelInfo* info, NxScanHelper* helper, NxKernel** kernel) {
  if (info == nullptr || kernel == nullptr || info->session == nullptr)
    return MakeStatus(NX_INVALID_ARGUMENT,
                      "CreateScanKernel: needs the kernel info of a Scan node");
  if (helper != nullptr && (helper->Transpose == nullptr || helper->Release == nullptr))
    return MakeStatus(NX_INVALID_ARGUMENT,
                      "CreateScanKernel: the helper needs Transpose and Release");
  return CatchAsStatus([&] {
    const Node& node = *info->node;
    NXRT_CHECK(node.op_type == "Scan" && node.domain.empty(), NX_INVALID_ARGUMENT,
               "CreateScanKernel: " + node.Describe() + " is not a Scan node");
    NXRT_CHECK(node.opset >= 8, NX_NOT_IMPLEMENTED, node.Describe() + ": Scan before opset 8");
    const Attribute* a = node.FindAttribute("body");
    NXRT_CHECK(a != nullptr && a->graph, NX_INVALID_MODEL, node.Describe() + ": missing body");
    auto k = std::make_unique<ScanKernel>();
    k->body = std::make_unique<BodyRunner>(*info->session, node, a->graph);
    k->opset = node.opset;
    k->base.version = NXRT_EP_API_VERSION;
    k->base.Compute = [](NxKernel* self, NxKernelContext* ctx) {
      return CatchAsStatus([&] { reinterpret_cast<ScanKernel*>(self)->Compute(*ctx); });
    };
    k->base.Release = [](NxKernel* self) { delete reinterpret_cast<ScanKernel*>(self); };
    k->helper = helper;
    k->memory = info->memory;
    *kernel = &k.release()->base;
  });
}

}  // namespace nxrt
