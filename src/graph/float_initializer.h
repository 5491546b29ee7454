// New float initializers for graph rewrites that fold constants into weights (session/
// graph_fusion.cc, session/parallel_conv_merge.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace nxrt {

// Adds a float initializer of shape `dims` holding `data`, named `base` or, when a value has that
// name, `base_1`, `base_2`, ...; returns its value index.
int AddFloatInitializer(Graph& graph, const std::string& base, const std::vector<int64_t>& dims,
                        const std::vector<float>& data);

}  // namespace nxrt
