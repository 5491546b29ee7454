// Small integer tensors whose contents are known before any run (what ONNX calls data
// propagation). Exporters compute sizes from shapes: torch writes F.interpolate(x,
// size=y.shape[-2:]) as Shape -> Slice -> Concat feeding Resize's `sizes`, and view/reshape as
// Shape -> Gather -> Unsqueeze -> Concat feeding Reshape. Where the shapes are static those tensors
// are constants in all but name: knowing them gives the Resize or Reshape a static output shape
// (shape inference), and lets the session make them initializers before placement
// (shape_value_folding.h), so an EP that needs a constant `sizes` (the CPU EP's blocked groups)
// sees one.
//
// Only what is certain is known: tensors of rank 0 or 1 with at most kMaxKnownIntegers int64 or
// int32 elements, computed by rules that give exactly what the operator's kernel would (integer
// division only where it is exact, casts only where the value fits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace nxrt {

inline constexpr size_t kMaxKnownIntegers = 1024;

struct KnownIntegers {
  NxElementType type = NX_TYPE_INT64;  // NX_TYPE_INT64 or NX_TYPE_INT32
  std::vector<int64_t> dims;           // {} (a scalar) or {n}
  std::vector<int64_t> values;
};

// Per value of one graph (indexed like Graph::values).
using KnownIntegerTable = std::vector<std::optional<KnownIntegers>>;

// The contents of input `i` of `node`: an integer initializer of rank <= 1 (not one that is also
// a graph input: the caller may feed another) or a value `known` holds.
std::optional<KnownIntegers> KnownInput(const Graph& graph, const Node& node, size_t i,
                                        const KnownIntegerTable& known);

// Records in `known` the contents of `node`'s outputs where they follow from what is known of its
// inputs and their static shapes (Shape, Size, Identity, Cast, Squeeze, Unsqueeze, Reshape,
// Flatten, Concat, Slice, Gather, Add, Sub, Mul, Div, Max, Min). The outputs' types must be
// inferred already. ONNX-domain nodes only; never throws.
void PropagateKnownIntegers(const Graph& graph, const Node& node, KnownIntegerTable& known);

// The table for every value of `graph` (its own nodes, in order; not its subgraphs).
KnownIntegerTable KnownIntegerValues(const Graph& graph);

}  // namespace nxrt
