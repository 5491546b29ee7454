// QDQ folding: models that onnxruntime.quantization.quantize_static writes in QDQ format carry
// their int8 arithmetic as float operators between DequantizeLinear (DQ) and QuantizeLinear (Q)
// nodes. This pass, run at session creation before placement, replaces each such island with the
// quantized operator that computes it on the 8-bit tensors directly:
//
//   DQ(x) , DQ(const w) [, DQ(const int32 b) | const float b] -> Conv [-> Relu] -> Q
//        => QLinearConv (ONNX), or com.nxrt QLinearConv activation="Relu" (relu is exact on
//           the quantized output: Q(max(v, 0)) = max(Q(v), y_zero_point))
//   DQ(a) , DQ(const 2-D b) -> MatMul -> Q       => QLinearMatMul (b per tensor or per column)
//   DQ(a) , DQ(b) -> Add -> Q                   => com.microsoft QLinearAdd
//   DQ(x) -> GlobalAveragePool -> Q             => com.microsoft QLinearGlobalAveragePool
//   DQ(x) -> MaxPool | Flatten | Reshape -> Q   => the same op on x, when Q undoes DQ (same
//                                                  scale, zero point and type): these commute
//                                                  with a monotone per-tensor quantization
//
// Only when the semantics are kept: scales and zero points constant, activation scales per
// tensor, weight scales per tensor or per output channel (axis 0), the float value between the
// op and Q used by nothing else. A DQ whose output still has other consumers stays for them;
// DQ and Q nodes left without consumers are removed. Folding happens only when the CPU EP is
// the session's only EP (another EP might have claimed the float ops) and its kernel registry
// runs the folded node.
#pragma once

#include <memory>
#include <vector>

#include "base/logger.h"
#include "graph/graph.h"
#include "session/ep_instance.h"

namespace nxrt {

// Rewrites `graph` in place (before placement). `cpu_ep` indexes `eps`. Returns the number of
// folded islands.
int FoldQdq(Graph& graph, const std::vector<std::shared_ptr<EpInstance>>& eps, int cpu_ep,
            const Logger& logger);

}  // namespace nxrt
