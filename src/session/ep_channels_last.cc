#include "session/ep_channels_last.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "graph/layout_values.h"
#include "plugins/kernel_registry.h"
#include "session/ep_instance.h"
#include "session/placement.h"

namespace nxrt {
namespace {

const std::set<std::string>& LayoutSensitiveOps() {
  static const std::set<std::string> ops = {"Conv",
                                            "ConvTranspose",
                                            "MaxPool",
                                            "AveragePool",
                                            "LpPool",
                                            "GlobalAveragePool",
                                            "GlobalMaxPool",
                                            "LRN",
                                            "BatchNormalization",
                                            "InstanceNormalization",
                                            "DepthToSpace",
                                            "SpaceToDepth"};
  return ops;
}

// Elementwise ONNX operators of one data input (any further inputs are scalars such as Clip's
// bounds): the layout of that input is the layout of the output.
bool IsUnaryElementwise(const Node& n) {
  static const std::set<std::string> ops = {
      "Relu",       "Clip",     "Sigmoid", "Tanh",  "LeakyRelu", "HardSigmoid",
      "HardSwish",  "Elu",      "Selu",    "Celu",  "Softplus",  "Softsign",
      "Abs",        "Neg",      "Exp",     "Log",   "Sqrt",      "Erf",
      "Gelu",       "Identity", "Cast",    "Floor", "Ceil",      "Round",
      "Reciprocal", "Sign",     "Mish",    "Not",   "IsNaN"};
  return n.domain.empty() && ops.count(n.op_type) != 0 && !n.inputs.empty() && n.inputs[0] >= 0 &&
         n.outputs.size() == 1;
}

bool IsBinaryElementwise(const Node& n) {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"};
  return n.domain.empty() && ops.count(n.op_type) != 0 && n.inputs.size() == 2 &&
         n.inputs[0] >= 0 && n.inputs[1] >= 0 && n.outputs.size() == 1;
}

// Whether value `v` holds one element whatever the layout (a scalar or [1, 1, ...] operand).
bool IsOneElement(const Graph& g, int v) {
  const ValueDef& d = g.value(v);
  if (d.initializer) return d.initializer->kind == NX_VALUE_TENSOR && d.initializer->count == 1;
  if (!d.type.has_shape) return false;
  for (int64_t dim : d.type.dims)
    if (dim != 1) return false;
  return true;
}

bool IsFourD(const Graph& g, int v) {
  if (v < 0) return false;  // an omitted input
  const ValueDef& d = g.value(v);
  return d.type.has_shape && d.type.dims.size() == 4;
}

class Rewriter {
 public:
  explicit Rewriter(Graph& g) : g_(g) {
    auto it = g.opsets.find("");
    onnx_opset_ = it != g.opsets.end() ? it->second : 13;
  }

  int Run(const std::function<bool(const Node&)>& convert) {
    std::vector<Node> nodes = std::move(g_.nodes);
    g_.nodes.clear();
    int rewritten = 0;
    for (Node& n : nodes) {
      if (IsLayoutSensitive(n) && IsFourD(g_, n.inputs[0]) && convert(n)) {
        n.inputs[0] = ToNhwc(n.inputs[0]);
        n.domain = kNhwcDomain;
        Nhwc(n.outputs[0]);
        ++rewritten;
      } else if (IsUnaryElementwise(n) && nhwc_.count(n.inputs[0])) {
        n.inputs[0] = nhwc_[n.inputs[0]];
        for (size_t i = 1; i < n.inputs.size(); ++i) Nchw(n.inputs[i]);
        Nhwc(n.outputs[0]);
      } else if (IsBinaryElementwise(n) && BinaryStaysNhwc(n)) {
        for (int& v : n.inputs)
          if (nhwc_.count(v)) v = nhwc_[v];
        Nhwc(n.outputs[0]);
      } else if (IsChannelConcat(n)) {
        for (int& v : n.inputs) v = nhwc_[v];
        SetAxis(n, 3);
        Nhwc(n.outputs[0]);
      } else {
        for (int v : n.inputs) Nchw(v);
        for (int v : n.implicit_inputs) Nchw(v);
      }
      g_.nodes.push_back(std::move(n));
    }
    for (int v : g_.outputs) Nchw(v);
    if (rewritten > 0 || !nhwc_.empty()) {
      if (g_.opsets.find(kNhwcDomain) == g_.opsets.end()) g_.opsets[kNhwcDomain] = onnx_opset_;
      g_.Finalize();
    }
    return rewritten;
  }

 private:
  // An NHWC operand with an NHWC (same rank) or one-element other operand.
  bool BinaryStaysNhwc(const Node& n) const {
    const int a = n.inputs[0], b = n.inputs[1];
    const bool a_nhwc = nhwc_.count(a) != 0, b_nhwc = nhwc_.count(b) != 0;
    if (a_nhwc && b_nhwc) return true;
    return (a_nhwc && IsOneElement(g_, b)) || (b_nhwc && IsOneElement(g_, a));
  }

  bool IsChannelConcat(const Node& n) const {
    if (!n.domain.empty() || n.op_type != "Concat" || n.inputs.empty() || n.outputs.size() != 1)
      return false;
    const Attribute* axis = n.FindAttribute("axis");
    if (axis == nullptr || (axis->i != 1 && axis->i != -3)) return false;
    for (int v : n.inputs)
      if (v < 0 || !nhwc_.count(v)) return false;
    return true;
  }

  static void SetAxis(Node& n, int64_t axis) {
    for (Attribute& a : n.attributes)
      if (a.name == "axis") a.i = axis;
  }

  // Output `v` of the node being rewritten now comes out NHWC, as a new value.
  void Nhwc(int& v) {
    const int original = v;
    v = NewValue(original);
    nhwc_[original] = v;
  }

  // A new NHWC value for NCHW `v`.
  int NewValue(int v) { return AddPermutedValue(g_, v, {0, 2, 3, 1}); }

  void AddTranspose(int from, int to, std::vector<int64_t> perm) {
    AppendTranspose(g_, from, to, std::move(perm), onnx_opset_);
  }

  // NCHW `v` as NHWC: its NHWC copy when it has one, else a Transpose made once.
  int ToNhwc(int v) {
    auto it = nhwc_.find(v);
    if (it != nhwc_.end()) return it->second;
    const int nv = NewValue(v);
    AddTranspose(v, nv, {0, 2, 3, 1});
    nhwc_[v] = nv;
    nchw_ready_.insert(v);  // v itself stays readable
    return nv;
  }

  // `v`, where it exists only as NHWC, readable under its own name: a Transpose back, made once.
  void Nchw(int v) {
    if (v < 0 || !nhwc_.count(v) || nchw_ready_.count(v)) return;
    AddTranspose(nhwc_[v], v, {0, 3, 1, 2});
    nchw_ready_.insert(v);
  }

  Graph& g_;
  int onnx_opset_ = 13;
  std::map<int, int> nhwc_;   // NCHW value -> its NHWC copy
  std::set<int> nchw_ready_;  // NCHW values that have a producer
};

}  // namespace

bool IsLayoutSensitive(const Node& n) {
  if (!n.domain.empty() || LayoutSensitiveOps().count(n.op_type) == 0) return false;
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  // Only the main output: MaxPool's Indices and BatchNormalization's training outputs would
  // need their own layout.
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.outputs[o] >= 0) return false;
  return true;
}

int RewriteChannelsLast(Graph& g, const std::function<bool(const Node&)>& convert) {
  bool any = false;
  for (const Node& n : g.nodes) any = any || (IsLayoutSensitive(n) && IsFourD(g, n.inputs[0]));
  if (!any) return 0;
  return Rewriter(g).Run(convert);
}

int EpChannelsLast(Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                   const NxLogger& logger) {
  // Which EPs want which of the graph's layout-sensitive operators in channels-last form.
  std::map<std::pair<size_t, std::string>, bool> wants;
  bool anyone = false;
  for (const Node& n : g.nodes) {
    if (!IsLayoutSensitive(n) || !IsFourD(g, n.inputs[0])) continue;
    for (size_t e = 0; e < eps.size(); ++e) {
      auto [it, added] = wants.try_emplace({e, n.op_type}, false);
      if (added) it->second = eps[e]->PrefersChannelsLast(n.domain, n.op_type);
      anyone = anyone || it->second;
    }
  }
  if (!anyone) return 0;
  const GraphPlacement placement = PlaceGraph(g, eps, logger);
  return RewriteChannelsLast(g, [&](const Node& n) {
    const int e = placement.node_ep[static_cast<size_t>(n.index)];
    if (e < 0 || placement.node_group[static_cast<size_t>(n.index)] >= 0) return false;
    auto it = wants.find({static_cast<size_t>(e), n.op_type});
    if (it == wants.end() || !it->second) return false;
    const KernelRegistry* registry = eps[static_cast<size_t>(e)]->registry();
    if (registry == nullptr) return false;
    Node probe = n;
    probe.domain = kNhwcDomain;
    return registry->Find(probe, nullptr) != nullptr;
  });
}

}  // namespace nxrt
