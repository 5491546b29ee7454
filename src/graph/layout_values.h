// Helpers of the passes that move 4-D activations between NCHW and NHWC
// (session/qdq_channels_last.h, session/ep_channels_last.h): a new value holding another one in a
// permuted layout, and the Transpose node that fills it.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace nxrt {

// A new value of `g` for value `v` in the layout `perm` gives (4 axes): same element type, dims
// permuted when `v` has a static 4-D shape. Named "<v>_nhwc" (with a number when taken).
int AddPermutedValue(Graph& g, int v, const std::vector<int64_t>& perm);

// Appends to `g.nodes` a Transpose(perm) of ONNX opset `opset` from value `from` to value `to`.
void AppendTranspose(Graph& g, int from, int to, std::vector<int64_t> perm, int opset);

}  // namespace nxrt
