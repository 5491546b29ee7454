// A group of a graph's nodes as a graph of its own: the values it reads from outside and those it
// gives back, and the copy of its nodes that an EP compiles (NxEp::CompileGroup) or an
// onnxruntime plugin asks for (OrtGraph view). Pure graph code, shared by session/ and
// ort_plugins/.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace nxrt {

// Values a node reads: inputs and implicit inputs.
std::vector<int> ReadsOf(const Node& node);

// The values `group` (node indices) reads from outside it, and those it produces that are read
// outside it or returned by `g`, each in order of first use.
void GroupBoundary(const Graph& g, const std::vector<int>& group, std::vector<int>& inputs,
                   std::vector<int>& outputs);

// The view of `group`'s nodes that CompileGroup receives: a graph holding copies of them whose
// inputs are the values they read from outside (initializers keep their data) and whose outputs
// are the values used outside them or returned by `g`. `inputs`/`outputs` receive those values'
// indices in `g`, in the same order.
std::unique_ptr<Graph> MakeGroupGraph(const Graph& g, const std::vector<int>& group,
                                      const std::string& name, std::vector<int>& inputs,
                                      std::vector<int>& outputs);

}  // namespace nxrt
