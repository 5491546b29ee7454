#include "graph/batch_norm_affine.h"

#include <cmath>

namespace nxrt {

bool InferenceBatchNormAffine(const Graph& graph, const Node& bn, int64_t channels,
                              std::vector<float>& scale, std::vector<float>& shift) {
  if (!bn.domain.empty() || bn.op_type != "BatchNormalization" || bn.inputs.size() != 5 ||
      channels <= 0)
    return false;
  // Training outputs (running mean / variance) present: not an inference node.
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (bn.outputs[i] >= 0) return false;
  const Attribute* training = bn.FindAttribute("training_mode");
  const Attribute* spatial = bn.FindAttribute("spatial");  // opset < 9; 0 = per element
  if ((training && training->i != 0) || (spatial && spatial->i == 0)) return false;
  const Attribute* eps_attr = bn.FindAttribute("epsilon");
  const double eps = eps_attr ? eps_attr->f : 1e-5;
  const float* p[4];
  for (int i = 0; i < 4; ++i) {
    const int v = bn.inputs[static_cast<size_t>(i) + 1];
    const ValuePtr c = v >= 0 ? graph.value(v).initializer : nullptr;
    if (!c || c->type != NX_TYPE_FLOAT || c->count != static_cast<size_t>(channels)) return false;
    p[i] = static_cast<const float*>(c->data);
  }
  scale.resize(static_cast<size_t>(channels));
  shift.resize(static_cast<size_t>(channels));
  for (int64_t o = 0; o < channels; ++o) {
    const double k = p[0][o] / std::sqrt(static_cast<double>(p[3][o]) + eps);
    scale[static_cast<size_t>(o)] = static_cast<float>(k);
    shift[static_cast<size_t>(o)] = static_cast<float>(p[1][o] - p[2][o] * k);
  }
  return true;
}

}  // namespace nxrt
