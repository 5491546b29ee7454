// An inference BatchNormalization as the per-channel affine map it is: y = s * x + t with
// s = scale / sqrt(var + epsilon) and t = bias - mean * s. Graph rewrites fold it into the
// weights of a neighbouring convolution (session/graph_fusion.cc after a Conv,
// session/parallel_conv_merge.cc as an identity branch beside one).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace nxrt {

// True, with `scale` and `shift` filled, when `bn` is an ONNX BatchNormalization in inference
// form (no training outputs, training_mode 0, per channel) whose four parameters are float
// initializers of `channels` elements each.
bool InferenceBatchNormAffine(const Graph& graph, const Node& bn, int64_t channels,
                              std::vector<float>& scale, std::vector<float>& shift);

}  // namespace nxrt
