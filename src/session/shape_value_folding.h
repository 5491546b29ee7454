// Shape computations made constants before placement. torch computes F.interpolate's `sizes`
// and view's shapes from Shape nodes at run time (Shape -> Slice -> Concat); where the shapes are
// static the results are known when the model loads (graph/known_integers.h), and the nodes that
// compute them only cut the graph: an EP that needs the value constant at compile time (the CPU
// EP's blocked groups take a nearest Resize whose `sizes` is constant) saw a computed value, and
// the Shape node reading a group's value from outside put a cycle between the group and its
// Resize (GhostNetV2's attention gates). Each such node leaves the graph and its outputs become
// initializers.
#pragma once

#include "graph/graph.h"

namespace nxrt {

// Replaces the ONNX-domain nodes of `graph` whose every output has known contents (no graph
// outputs, none read by a subgraph by name) with initializers holding those contents; drops the
// initializers only they read. Returns the number of nodes removed; finalizes `graph` when it
// changed.
int FoldShapeValues(Graph& graph);

}  // namespace nxrt
