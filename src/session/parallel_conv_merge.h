// Parallel convolutions of one input, summed, merged into one convolution before placement.
//
// Re-parameterizable networks (RepVGG, MobileOne, FastViT's MobileOne blocks, ACNet / DBB-style
// blocks) train with several branches over the same input: a 3x3 convolution, a 1x1 one, often
// a BatchNormalization of the input itself (the identity branch), their outputs added. Exported
// without the authors' re-parameterization step (timm's models export that way unless asked),
// every branch runs at inference: MobileOne-S0 runs five convolutions where one suffices. Since
// convolution is linear in its weights, Conv(x, W1) + Conv(x, W2) = Conv(x, W1 + W2) once both
// kernels are placed on one grid (the smaller one zero-padded where its padding says it sits),
// a constant added per channel is a bias, and BN(x) or x itself is a convolution whose kernel
// holds the BN's scale (or 1) at the centre tap of each channel's own input channel.
//
// What merges: an ONNX Add whose two inputs are each read only by it, where one is a float Conv
// with constant weights (and bias) and the other is
//   - another such Conv of the same input with the same group, strides and dilations, whose
//     kernel and padding place both on one grid,
//   - a constant of one value per output channel (or a single value),
//   - the Conv's own input, or an inference BatchNormalization of it with constant parameters
//     (stride 1, as many output as input channels, a padding that keeps the size);
// repeated until nothing matches, so a chain of Adds over five branches becomes one Conv.
#pragma once

#include "graph/graph.h"

namespace nxrt {

// Rewrites `graph` in place; returns the number of Add nodes folded away. Finalizes `graph`
// when it changed and drops initializers nothing reads any more.
int MergeParallelConvs(Graph& graph);

}  // namespace nxrt
