// Identity nodes, bypassed before placement: each reader of an Identity's output reads the
// Identity's input itself, and the Identity leaves the graph. Two kinds mattered:
//  - Identities of initializers: torch.onnx deduplicates equal initializers and hands each later
//    user the first one through an Identity (the zero biases of a randomly initialised
//    ResNeXt's folded batch norms: 33 Identities). An EP that needs a node's weight to be
//    constant at compile time (the CPU EP's blocked convolution groups) saw a computed value,
//    and whole groups fell back to single nodes (ResNeXt-50 1.19x onnxruntime's time at two
//    threads).
//  - Identities of computed values: PaddlePaddle's exporter leaves one after many layers
//    (PP-OCRv6's recogniser: 40), and each cut a blocked group in two.
//  - Slices that keep all of their input (start 0, end at or past the axis's static size, step
//    1 on every sliced axis): GhostNet slices each module's concatenated halves to the module's
//    width, usually all of it (GhostNet 1.53x -> 0.85x onnxruntime's time at one thread).
//  - Pads whose pads are all 0 (torch's F.avg_pool2d(x, 2, 2) in GhostNetV2).
// Identities whose output is a graph output, or that a subgraph reads by name, stay, as do
// those of outer-scope values. An initializer that is also a graph input is no constant (the
// caller may feed it): its readers read that input, as they would have through the Identity.
#pragma once

#include "graph/graph.h"

namespace nxrt {

// Returns the number of Identity nodes removed; finalizes `graph` when it changed.
int BypassIdentities(Graph& graph);

}  // namespace nxrt
