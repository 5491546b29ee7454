// Which nodes a blocked-layout group can hold, decided from the graph view alone (types, static
// shapes, attributes, constant inputs), so that GetCapability and CompileGroup agree.
//
// A blocked group keeps its float32 activations in oneDNN's channel-blocked layout (nChw8c on
// AVX2, nChw16c on AVX-512: channels in groups of 8 or 16 that sit in one vector, the last group
// zero-padded) from its first node to its last, and reorders only where values enter or leave
// the group (blocked_program.h). Every member works on 4-D [N, C, H, W] float tensors whose
// channel count is known.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

namespace nxrt::cpu::blocked {

enum class BlockedOp {
  kNone,           // not in a blocked group
  kConv,           // 2-D Conv, constant weights (and bias); group 1, depthwise or grouped
  kActivation,     // Relu, LeakyRelu, Sigmoid, Tanh, HardSwish, HardSigmoid, Clip, Gelu (erf
                   // form: ONNX opset 20 with approximate "none", com.microsoft)
  kGeluErf,        // Erf inside a written-out Gelu, x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5
                   // (PaddlePaddle, torch): a member only with the whole pattern (the capability
                   // checks it), which the program runs as one Gelu
  kLinear,         // Add, Sub, Mul or Div with a one-element constant: x * a + b
  kBatchNorm,      // BatchNormalization for inference, constant statistics
  kAdd,            // same shapes, or one side [N, C, 1, 1]; or x + c, x - c (Sub) with a
                   // constant c of one value per channel
  kMul,            // same shapes, or one side [N, C, 1, 1] (squeeze-and-excitation scales);
                   // or x * c with a constant c of one value per channel
  kMaxPool,        // 2-D, without the Indices output
  kAveragePool,    // 2-D
  kGlobalPool,     // GlobalAveragePool, GlobalMaxPool; ReduceMean over the spatial axes with
                   // keepdims
  kConcat,         // along channels
  kSplit,          // Split along channels into outputs of known channel counts (YOLOv8's C2f,
                   // MixNet's mixed kernels, ShuffleNet)
  kResize,         // Resize (opset 11 on), nearest, of height and width only, by a constant
                   // `sizes` or `scales` (torch's F.interpolate; GhostNetV2's attention gates)
  kConstantAlias,  // Identity, Reshape, Squeeze, Unsqueeze or Flatten of a constant (torch
                   // exports share weights through Identity; PaddlePaddle reshapes biases)
};

// A 4-D float tensor whose channel count is known (batch, height and width may be symbolic).
bool IsBlockable(const ep::ValueInfoView& v);
// Its declared shape, -1 where unknown (call only when IsBlockable).
std::vector<int64_t> StaticDims(const ep::ValueInfoView& v);

// What `node` is as a member of a blocked group of `block`-channel blocks. `is_constant(value)`
// says whether a value is a constant of the group (an initializer, or the output of a
// kConstantAlias node); Conv weights, biases and Clip bounds must be.
template <class IsConstant>
BlockedOp ClassifyNode(const ep::NodeView& node, int64_t block, IsConstant&& is_constant);

// Whether a grouped convolution of `in_per_group` input and `out_per_group` output channels per
// group runs as one group per `block`-channel block, its weights zero outside the groups'
// diagonal: groups narrower than a block that tile it (4 or 8 channels on 16-channel blocks, 4
// on 8), at most 4 groups per block (4x the multiply-adds). Channel counts that end inside a
// block (RegNet's 104) end in a block of fewer groups, its padding lanes computed as zero.
inline bool NarrowGroups(int64_t in_per_group, int64_t out_per_group, int64_t block) {
  return in_per_group == out_per_group && in_per_group < block && block % in_per_group == 0 &&
         block / in_per_group <= 4;
}

// An activation as oneDNN describes it (one eltwise step).
struct Eltwise {
  int algorithm = 0;  // a dnnl::algorithm value (kept as int: this header stays oneDNN-free)
  float alpha = 0.0f, beta = 0.0f;
};

// ---- implementation of the template ------------------------------------------------------

bool IsActivationOp(const std::string& op);
BlockedOp ClassifyWithConstants(const ep::NodeView& node, int64_t block,
                                const std::vector<bool>& input_constant);

template <class IsConstant>
BlockedOp ClassifyNode(const ep::NodeView& node, int64_t block, IsConstant&& is_constant) {
  std::vector<bool> constant(node.input_count(), false);
  for (size_t i = 0; i < constant.size(); ++i) {
    ep::ValueInfoView v = node.input(i);
    constant[i] = v.present() && is_constant(v);
  }
  return ClassifyWithConstants(node, block, constant);
}

}  // namespace nxrt::cpu::blocked
