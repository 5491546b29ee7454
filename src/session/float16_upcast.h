// Float16 models computed in float32 on the CPU. Models converted to float16 for GPUs (onnx's
// or onnxruntime's float16 converters, exporters' half() models) carry float16 weights and
// activations; the CPU EP has float32 kernels only for most ops, so each node converted its
// inputs and outputs on every run and nothing was fused or blocked: such models ran 2x slower
// than their float32 originals. This pass, run at session creation before placement, rewrites
// the graph to compute in float32 (what OpenVINO does with its f32 precision hint):
//
//   - every float16 initializer, Constant and ConstantOfShape value becomes float32 (exactly:
//     each float16 value is a float32 value);
//   - every value typed float16 (also in If/Loop/Scan bodies) is typed float32, and Cast,
//     EyeLike, Random*, Bernoulli and SequenceEmpty that make float16 make float32;
//   - the model's interface is kept: a float16 graph input is cast to float32 once, and a float16
//     graph output is cast back from float32 at the end.
//
// So intermediate results are no longer rounded to float16 after each op: they are at least as
// accurate. Applied only when the CPU EP is the session's only EP (another EP may run float16
// natively), the model carries float16 weights (at least kMinFloat16Weights elements of float16
// initializers: a converted model, not a float16 operator test), and the session option
// "session.float16_as_float32" is not "0". Graphs where a float16 graph input or output is also
// an initializer, another graph input or output, or is read by a subgraph by name are left as
// they are.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/config.h"
#include "base/logger.h"
#include "graph/graph.h"
#include "session/ep_instance.h"

namespace nxrt {

constexpr int64_t kMinFloat16Weights = 1024;

// Rewrites `graph` in place when the conditions above hold. `cpu_ep` indexes `eps`. Returns the
// number of float16 values it retyped (0: the graph is unchanged).
int UpcastFloat16(Graph& graph, const std::vector<std::shared_ptr<EpInstance>>& eps, int cpu_ep,
                  const Config& config, const Logger& logger);

}  // namespace nxrt
