// Channels-last (NHWC) nodes for EPs that ask for them (NxEp::PrefersChannelsLast, ABI 15), as
// onnxruntime does for EPs whose preferred data layout is NHWC (its WebGPU and QNN plugins).
//
// A layout-sensitive node (Conv, the pools, ...) that such an EP would run becomes its
// channels-last form: domain "com.ms.internal.nhwc", input 0 and output 0 NHWC, the rest as it
// was. Elementwise nodes and channel Concats whose data inputs are all NHWC (or a one-element
// operand) work on the NHWC values as they are, so a chain Conv -> Relu -> Conv needs no
// transpose in between. A Transpose is inserted once where an NCHW value first feeds an NHWC
// node, and once where an NHWC value meets any other reader or is a graph output. Values keep
// their names and NCHW meaning; the NHWC copies are new values.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "nxrt/nxrt_ep_api.h"

namespace nxrt {

class EpInstance;

inline constexpr const char* kNhwcDomain = "com.ms.internal.nhwc";

// Whether `n` is an ONNX operator with an NHWC form (4-D input 0 and output 0 in NHWC).
bool IsLayoutSensitive(const Node& n);

// Rewrites every layout-sensitive node of `g` for which `convert` says yes (its input 0 must be
// 4-D); returns how many. `g` is finalized again when anything changed.
int RewriteChannelsLast(Graph& g, const std::function<bool(const Node&)>& convert);

// The session step: for EPs that prefer channels-last for some operators, places `g` (without
// compiling) to see which nodes each would run, and rewrites those whose channels-last form the
// EP's registry has a kernel for. Returns how many nodes changed (0 costs one query per EP and
// operator, no placement, when no EP asks).
int EpChannelsLast(Graph& g, const std::vector<std::shared_ptr<EpInstance>>& eps,
                   const NxLogger& logger);

}  // namespace nxrt
