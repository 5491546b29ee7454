// Static type and shape inference over the IR, written for unvalidated models: it reads whatever
// the loader built, never trusts it, and infers only what it is sure of.
#pragma once

#include "graph/graph.h"

namespace nxrt {

// Fills the static type (element type, and the shape where it is certain) of node outputs that
// the model does not declare, walking the finalized graph in topological order and each subgraph
// after the node that owns it (so outer-scope values carry the type known in the parent).
// Declared types always win: a declared element type is never changed, a declared shape never
// replaced. Malformed nodes (bad attributes, wrong ranks, zero strides, overflowing dimensions)
// leave their outputs unknown; this function does not throw.
void InferTypesAndShapes(Graph& graph);

}  // namespace nxrt
