#include "session/qdq_channels_last.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/layout_values.h"
#include "nxrt/nxrt_ep_api.h"
#include "plugins/kernel_registry.h"

namespace nxrt {
namespace {

bool Is(const Node& n, const char* domain, const char* op) {
  return n.domain == domain && n.op_type == op;
}

// A 2-D folded convolution: its constant weight has rank 4.
bool IsConv2d(const Graph& g, const Node& n) {
  if (!Is(n, "com.nxrt", "QLinearConv") || n.inputs.size() < 8 || n.outputs.size() != 1)
    return false;
  // What the CPU kernel runs on oneDNN (the only path with channels_last): constant int8
  // weights with zero point 0.
  const ValuePtr& w = g.value(n.inputs[3]).initializer;
  const ValuePtr& zp = g.value(n.inputs[5]).initializer;
  if (!w || w->dims.size() != 4 || w->type != NX_TYPE_INT8 || !zp || zp->type != NX_TYPE_INT8)
    return false;
  const auto* z = static_cast<const int8_t*>(zp->data);
  for (size_t i = 0; i < zp->count; ++i)
    if (z[i] != 0) return false;
  return true;
}

Attribute IntAttr(const char* name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = NX_ATTR_INT;
  a.i = v;
  return a;
}

void SetIntAttr(Node& n, const char* name, int64_t v) {
  for (Attribute& a : n.attributes)
    if (a.name == name) {
      a = IntAttr(name, v);
      return;
    }
  n.attributes.push_back(IntAttr(name, v));
}

// An 8-bit 2-D MaxPool without Indices: the CPU EP's com.nxrt MaxPool takes it in NHWC (the
// QDQ folding turned DQ -> MaxPool -> Q into it).
bool IsQuantizedMaxPool2d(const Graph& g, const Node& n) {
  if (!Is(n, "", "MaxPool") || n.inputs.size() != 1 || n.inputs[0] < 0 || n.outputs.empty() ||
      n.outputs[0] < 0 || (n.outputs.size() > 1 && n.outputs[1] >= 0))
    return false;
  const Attribute* kernel = n.FindAttribute("kernel_shape");
  const Attribute* order = n.FindAttribute("storage_order");
  const int32_t type = g.value(n.inputs[0]).type.elem_type;
  return kernel != nullptr && kernel->ints.size() == 2 && (order == nullptr || order->i == 0) &&
         (type == NX_TYPE_UINT8 || type == NX_TYPE_INT8);
}

class ChannelsLast {
 public:
  ChannelsLast(Graph& g, const KernelRegistry& registry) : g_(g), registry_(registry) {
    auto it = g.opsets.find("");
    onnx_opset_ = it != g.opsets.end() ? it->second : 13;
  }

  int Run() {
    std::vector<Node> nodes = std::move(g_.nodes);
    g_.nodes.clear();
    int switched = 0;
    for (Node& n : nodes) {
      const bool conv = IsConv2d(g_, n);
      // Add or Mul of two NHWC tensors (also a squeeze-and-excitation scale, [N, 1, 1, C] from
      // the NHWC pool, which broadcasts over H and W as [N, C, 1, 1] did in NCHW).
      const bool add =
          (Is(n, "com.microsoft", "QLinearAdd") || Is(n, "com.microsoft", "QLinearMul")) &&
          n.inputs.size() == 8 && nhwc_.count(n.inputs[0]) && nhwc_.count(n.inputs[3]);
      // (A pool that already reads NHWC by its own attribute keeps its input as it is.)
      const Attribute* layout = n.FindAttribute("channels_last");
      const bool gap = Is(n, "com.microsoft", "QLinearGlobalAveragePool") && !n.inputs.empty() &&
                       nhwc_.count(n.inputs[0]) && (layout == nullptr || layout->i == 0);
      const bool pool = IsQuantizedMaxPool2d(g_, n) && nhwc_.count(n.inputs[0]) && NhwcPool(n);
      // Elementwise on bytes (the tables of qdq_tables.h): any layout, no attribute.
      const bool table = Is(n, "com.nxrt", "TableLookup") && n.inputs.size() == 2 &&
                         n.inputs[0] >= 0 && nhwc_.count(n.inputs[0]) && n.outputs.size() == 1;
      // Split and QLinearConcat along channels of NHWC tensors: along the last axis.
      const bool split = Is(n, "", "Split") && !n.inputs.empty() && n.inputs[0] >= 0 &&
                         nhwc_.count(n.inputs[0]) && ChannelAxis(n);
      const bool concat = Is(n, "com.microsoft", "QLinearConcat") && n.inputs.size() >= 5 &&
                          (n.inputs.size() - 2) % 3 == 0 && ChannelAxis(n) && AllNhwc(n);
      if (table) {
        n.inputs[0] = nhwc_[n.inputs[0]];
        const int out = n.outputs[0];
        n.outputs[0] = NewValue(out, {0, 2, 3, 1});
        nhwc_[out] = n.outputs[0];
      } else if (split || concat) {
        if (split) {
          n.inputs[0] = nhwc_[n.inputs[0]];
        } else {
          for (size_t i = 2; i < n.inputs.size(); i += 3) n.inputs[i] = nhwc_[n.inputs[i]];
        }
        SetIntAttr(n, "axis", 3);
        for (int& out : n.outputs) {
          if (out < 0) continue;
          const int original = out;
          out = NewValue(original, {0, 2, 3, 1});
          nhwc_[original] = out;
        }
        ++switched;
      } else if (conv || add || gap || pool) {
        // The activation inputs in NHWC; scales, zero points, weights and bias as they are.
        const std::vector<size_t> data = conv  ? std::vector<size_t>{0}
                                         : add ? std::vector<size_t>{0, 3}
                                               : std::vector<size_t>{0};
        for (size_t i : data) n.inputs[i] = ToNhwc(n.inputs[i]);
        SetIntAttr(n, "channels_last", 1);
        const int out = n.outputs[0];
        const int out_nhwc = NewValue(out, {0, 2, 3, 1});
        n.outputs[0] = out_nhwc;
        nhwc_[out] = out_nhwc;
        ++switched;
      } else {
        for (int& v : n.inputs)
          if (v >= 0 && nhwc_.count(v)) EnsureNchw(v);
        for (int& v : n.implicit_inputs)
          if (v >= 0 && nhwc_.count(v)) EnsureNchw(v);
      }
      g_.nodes.push_back(std::move(n));
    }
    for (int v : g_.outputs)
      if (nhwc_.count(v)) EnsureNchw(v);
    g_.Finalize();
    return switched;
  }

 private:
  // Turns the ONNX MaxPool `n` into the com.nxrt MaxPool with channels_last=1 if the EP has a
  // kernel for it (else leaves it as it is and returns false).
  bool NhwcPool(Node& n) {
    Node probe = n;
    probe.domain = "com.nxrt";
    probe.opset = 1;
    SetIntAttr(probe, "channels_last", 1);
    if (registry_.Find(probe, nullptr) == nullptr) return false;
    n.domain = probe.domain;
    n.opset = probe.opset;
    return true;
  }

  // Whether `n`'s axis attribute names the channels of a 4-D tensor (1 or -3).
  static bool ChannelAxis(const Node& n) {
    const Attribute* a = n.FindAttribute("axis");
    const int64_t axis = a != nullptr ? a->i : (n.op_type == "Split" ? 0 : -1);
    return axis == 1 || axis == -3;
  }

  // Whether every data input of a QLinearConcat is NHWC.
  bool AllNhwc(const Node& n) const {
    for (size_t i = 2; i < n.inputs.size(); i += 3)
      if (n.inputs[i] < 0 || !nhwc_.count(n.inputs[i])) return false;
    return true;
  }

  int NewValue(int v, const std::vector<int64_t>& perm) { return AddPermutedValue(g_, v, perm); }

  void AddTranspose(int from, int to, const std::vector<int64_t>& perm) {
    AppendTranspose(g_, from, to, perm, onnx_opset_);
  }

  // NCHW `v` as NHWC: its NHWC copy when it has one, else a Transpose made once.
  int ToNhwc(int v) {
    auto it = nhwc_.find(v);
    if (it != nhwc_.end()) return it->second;
    const int nv = NewValue(v, {0, 2, 3, 1});
    AddTranspose(v, nv, {0, 2, 3, 1});
    nhwc_[v] = nv;
    nchw_ready_[v] = true;  // v itself stays readable
    return nv;
  }

  // `v` (produced as NHWC) readable under its own name: a Transpose back, made once.
  void EnsureNchw(int v) {
    if (nchw_ready_[v]) return;
    AddTranspose(nhwc_[v], v, {0, 3, 1, 2});
    nchw_ready_[v] = true;
  }

  Graph& g_;
  const KernelRegistry& registry_;
  int onnx_opset_ = 13;
  std::map<int, int> nhwc_;         // NCHW value -> its NHWC copy
  std::map<int, bool> nchw_ready_;  // whether the NCHW value has a producer
};

}  // namespace

int QuantizedChannelsLast(Graph& graph, const KernelRegistry& registry) {
  bool any = false;
  for (const Node& n : graph.nodes) any = any || IsConv2d(graph, n);
  if (!any) return 0;
  return ChannelsLast(graph, registry).Run();
}

}  // namespace nxrt
