// Constant folding at session creation. A node placed on the CPU EP whose inputs are all
// constants computes the same tensors on every run: it runs once, here, through the CPU EP's own
// kernels (a small session of the foldable nodes), and its outputs become initializers. Silero
// VAD, for example, reorders its LSTM weights with Slice/Concat/Unsqueeze inside an If branch on
// every frame; folded, the branch runs only the model's real work, and the kernels downstream
// can pre-pack the results like any other weight.
//
// Control-flow bodies read the enclosing graph's initializers as outer-scope values: those are
// made initializers of the body first (ResolveOuterConstants), so that folding, fusion and
// weight pre-packing see them as the constants they are.
#pragma once

#include <cstddef>

#include "base/logger.h"
#include "graph/graph.h"

namespace nxrt {

class Env;

// Every outer-scope value of `body` that `enclosing` (the graph of the session that runs the
// body, folded already) holds as an initializer becomes an initializer of `body`, sharing the
// tensor. Returns how many. Call Graph::Finalize afterwards.
int ResolveOuterConstants(Graph& body, const Graph& enclosing);

// Folds the foldable nodes of `graph` placed on EP `cpu_ep` (the session's index of the CPU EP;
// nothing happens when it is negative): ONNX-domain nodes without subgraphs that are neither
// random nor sequence/optional operators, whose inputs are initializers or outputs of foldable
// nodes. The nodes run on `env`'s CPU EP under `memory_limit` bytes (0 = none); when any of
// them fails, nothing is folded (the run reports the error as it would have). Folded nodes leave
// the graph, the values they produced for the rest become initializers, and initializers nobody
// reads any more are dropped. Finalizes `graph` when it changed. Returns the number of nodes
// folded.
int FoldConstants(Graph& graph, int cpu_ep, Env& env, size_t memory_limit, const Logger& logger);

// The same before placement, for sessions whose only EP is the CPU EP: every foldable node not
// placed yet. An EP that needs a constant at compile time then sees one: NFNet's convolutions
// standardise their weights in the graph (Reshape, BatchNormalization over the weight), so their
// weights were computed values when the CPU EP chose its blocked groups, and 57 convolutions ran
// one by one (1.09x onnxruntime's time).
int FoldConstantsBeforePlacement(Graph& graph, Env& env, size_t memory_limit, const Logger& logger);

}  // namespace nxrt
