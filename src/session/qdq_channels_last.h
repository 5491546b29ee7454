// Channels-last layout for folded quantized graphs (after qdq_folding.h).
//
// oneDNN's int8 convolutions work in NHWC; fed NCHW they pay a reorder of the input and of the
// output per convolution (52 of 370 ms in ResNet-50). This pass lets 8-bit activations stay NHWC
// between quantized ops: each 2-D com.nxrt QLinearConv gets channels_last=1 and reads/writes
// NHWC tensors, a com.microsoft QLinearAdd whose two inputs are both NHWC stays NHWC (it is
// elementwise), a QLinearGlobalAveragePool of an NHWC input gets channels_last=1, and an 8-bit
// MaxPool of an NHWC input becomes the com.nxrt MaxPool with channels_last=1 (where the EP's
// registry has it). Where an
// NHWC tensor meets any other reader (or is a graph output) a Transpose back to NCHW is inserted
// once; an NCHW tensor read by an NHWC convolution is transposed once for all such readers.
// Values keep their names and NCHW meaning; the NHWC copies are new values.
#pragma once

#include "graph/graph.h"
#include "plugins/kernel_registry.h"

namespace nxrt {

// Returns the number of nodes switched to channels-last (0: graph unchanged).
// Transpose must be runnable where the quantized nodes run (the CPU EP has it).
int QuantizedChannelsLast(Graph& graph, const KernelRegistry& registry);

}  // namespace nxrt
