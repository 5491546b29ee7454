// Graph fusions that pay off on CPU-like EPs, applied after placement: a chain of nodes placed
// on one EP is replaced by one fused node only when that EP's kernel registry has a kernel for
// the fused node (so an EP opts in by registering e.g. com.nxrt FusedConv). The fused node sits
// where the chain's last node was, which keeps the topological order.
//
// Fusions (domain com.nxrt, opset 1):
//   Conv [-> Mul(a) -> Add(b), scalar constants, folded into new W and B]
//        -> Add(same static shape) [-> activation]   => FusedConv(X, W, B, Z) activation=...
//   Conv -> activation                               => FusedConv(X, W, B) activation=...
//   x/sqrt(2) -> Erf -> +1 -> *x -> *0.5             => Gelu(x)
//   x -> +3 -> Clip(0, 6) -> *x -> /6 (or *1/6)      => HardSwish(x) (ONNX, opset 14), or the
//                                                       activation of a FusedConv producing x
//   MatMul(A, B) -> Add(bias) [-> activation]        => FusedMatMul(A, B, bias) activation=...
//     (float, B a constant 2-D weight [K, N], bias a constant of N values, activation Relu,
//     LeakyRelu, Sigmoid, Tanh or Gelu; after the fusions above, so a Gelu they made counts)
//   [Q -> Mul/Div(c) ->] MatMul(Q, Kt) [-> Mul/Div(c)] [-> Add(mask)] -> Softmax(last axis)
//        -> MatMul(., V)                             => FusedAttention(Q, Kt, V[, mask]) scale=...
//     (float, all operands of rank >= 2 with numpy broadcasting over the leading dims; a mask
//     may not widen the scores' last two dims)
//   ReduceMean(x) -> Sub -> Pow 2 (or Mul(d, d)) -> ReduceMean -> Add(eps) -> Sqrt -> Div (or
//     Reciprocal -> Mul) -> Mul(scale) [-> Add(bias)], over trailing axes with keepdims
//                                                    => LayerNormalization (ONNX, opset 17)
// Activations: Relu, LeakyRelu(alpha), Clip(min, max), Sigmoid, Tanh, HardSigmoid(alpha, beta),
// HardSwish, Swish (x * Sigmoid(x)), given as `activation` and `activation_params`.
#pragma once

#include <memory>
#include <vector>

#include "base/logger.h"
#include "graph/graph.h"
#include "session/ep_instance.h"

namespace nxrt {

inline constexpr const char* kNxrtDomain = "com.nxrt";

// Rewrites `graph` in place (nodes must carry assigned_ep). Returns the number of fusions.
int FuseNodes(Graph& graph, const std::vector<std::shared_ptr<EpInstance>>& eps,
              const Logger& logger);

}  // namespace nxrt
