// Identity nodes of constants, bypassed before placement. torch.onnx deduplicates equal
// initializers and hands each later user the first one through an Identity node (the zero
// biases of a randomly initialised ResNeXt's folded batch norms: 33 Identities). An EP that
// needs a node's weight to be constant at compile time (the CPU EP's blocked convolution
// groups) saw a computed value instead, and whole groups fell back to single nodes (ResNeXt-50
// 1.19x onnxruntime's time at two threads). Each reader of such an Identity's output reads the
// initializer itself, and the Identity leaves the graph; Identities whose output is a graph
// output, or that a subgraph reads by name, stay. An initializer that is also a graph input is
// no constant (the caller may feed it) and its Identities stay too.
#pragma once

#include "graph/graph.h"

namespace nxrt {

// Returns the number of Identity nodes removed; finalizes `graph` when it changed.
int BypassConstantIdentities(Graph& graph);

}  // namespace nxrt
