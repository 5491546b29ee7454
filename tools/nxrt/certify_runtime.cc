// The "copies", "control-flow" and "prepack" areas of `nxrt certify`: tensors in and out of the
// EP's device memory through its data transfer, the runtime's If / Loop / Scan running bodies on
// the EP (with its loop and scan helpers when it has device memory), and kernels with constant
// weights (packed once, shared between sessions) — each compared with the CPU EP.
#include <cstring>

#include "nxrt/certify_context.h"
#include "nxrt/certify_models.h"
#include "nxrt/value_format.h"

namespace nxrt::cli::certify {
namespace {

std::vector<std::string> ChainOrAdd(const Context& ctx) {
  return ctx.chain_ops.empty() ? std::vector<std::string>{"Add"} : ctx.chain_ops;
}

std::vector<Value> RunModel(Env& env, const std::string& model, const SessionOptions& options,
                            const ModelInputs& in, AssignmentReport* placement = nullptr) {
  Session session(env, model.data(), model.size(), &options);
  if (placement) *placement = session.assignment_report();
  return session.Run(in.names, in.pointers());
}

size_t BodyNodesOnEp(const Context& ctx, const AssignmentReport& r) {
  size_t n = 0;
  for (const AssignedSubgraph& s : r.subgraphs)
    if (!s.graph.empty() && s.ep_name == ctx.ep) n += s.nodes.size();
  return n;
}

struct TypeCase {
  NxElementType type;
  const char* name;
  size_t bytes;
};

}  // namespace

void CheckCopies(Context& ctx) {
  const char* area = "copies";
  if (!ctx.loaded) return;
  if (!ctx.device_memory) {
    ctx.Add(area, "data transfer", CheckStatus::kSkipped,
            "the EP computes in host memory: nothing to copy");
    return;
  }
  const TypeCase types[] = {{NX_TYPE_FLOAT, "float32", 4},  {NX_TYPE_FLOAT16, "float16", 2},
                            {NX_TYPE_DOUBLE, "float64", 8}, {NX_TYPE_INT8, "int8", 1},
                            {NX_TYPE_UINT8, "uint8", 1},    {NX_TYPE_INT32, "int32", 4},
                            {NX_TYPE_INT64, "int64", 8},    {NX_TYPE_BOOL, "bool", 1}};
  const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {3, 5}, {0, 7}, {257, 33}, {1 << 18}};
  for (const TypeCase& t : types) {
    const std::string name = std::string(t.name) + " host -> device -> device -> host";
    try {
      uint64_t seed = 100;
      for (const std::vector<int64_t>& shape : shapes) {
        Value host = RandomTensor(t.type, shape, ++seed);
        Value device = Value::InMemory(*ctx.env, ctx.memory, t.type, shape);
        const NxMemoryInfo* where = NxValue_GetMemoryInfo(device.get());
        if (where == nullptr || std::strcmp(where->name, ctx.memory->name) != 0)
          throw Exception(NX_FAIL, "a tensor created in the EP's memory is not there");
        host.CopyTo(*ctx.env, device);
        Value device2 = Value::InMemory(*ctx.env, ctx.memory, t.type, shape);
        device.CopyTo(*ctx.env, device2);
        Value back = Value::Tensor(t.type, shape);
        device2.CopyTo(*ctx.env, back);
        const size_t bytes = host.size() * t.bytes;
        if (bytes && std::memcmp(host.data<uint8_t>(), back.data<uint8_t>(), bytes) != 0) {
          std::string dims;
          for (int64_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
          throw Exception(NX_FAIL, "shape [" + dims + "]: the bytes differ after the round trip");
        }
      }
      ctx.Add(area, name, CheckStatus::kPassed,
              std::to_string(shapes.size()) + " shapes, up to " +
                  std::to_string((size_t{1} << 18) * t.bytes) + " bytes");
    } catch (const std::exception& e) {
      ctx.Add(area, name, CheckStatus::kFailed, e.what());
    }
  }

  // A run fed from device tensors that hands its output back in device memory.
  const std::string model = ChainModel(ChainOrAdd(ctx));
  const ModelInputs in = ChainInputs();
  try {
    const std::vector<Value> expected = RunModel(*ctx.env, model, Context::CpuSession(), in);
    ModelInputs on_device;
    on_device.names = in.names;
    for (const Value& v : in.values) {
      Value d = Value::InMemory(*ctx.env, ctx.memory, NX_TYPE_FLOAT, v.shape());
      v.CopyTo(*ctx.env, d);
      on_device.values.push_back(std::move(d));
    }
    SessionOptions options = ctx.EpSession();
    Session session(*ctx.env, model.data(), model.size(), &options);
    std::vector<Value> out =
        session.RunToMemories(nullptr, on_device.names, on_device.pointers(), {"Z"}, {ctx.memory});
    const NxMemoryInfo* where = NxValue_GetMemoryInfo(out[0].get());
    if (where == nullptr || std::strcmp(where->name, ctx.memory->name) != 0)
      throw Exception(NX_FAIL, "the output asked for in the EP's memory came back elsewhere");
    std::vector<Value> back;
    back.push_back(Value::Tensor(NX_TYPE_FLOAT, out[0].shape()));
    out[0].CopyTo(*ctx.env, back[0]);
    std::string why;
    const bool same = SameOutputs(back, expected, {"Z"}, kCpuRtol, kCpuAtol, &why);
    ctx.Add(area, "run with device inputs and a device output",
            same ? CheckStatus::kPassed : CheckStatus::kFailed, same ? "equal to the CPU EP" : why);
  } catch (const std::exception& e) {
    ctx.Add(area, "run with device inputs and a device output", CheckStatus::kFailed, e.what());
  }
}

void CheckControlFlow(Context& ctx) {
  const char* area = "control-flow";
  if (!ctx.loaded) return;
  if (ctx.chain_ops.empty()) {
    ctx.Add(area, "If, Loop, Scan", CheckStatus::kSkipped,
            "the EP claims none of the elementwise ops the bodies are made of");
    return;
  }
  std::vector<std::string> ops(ctx.chain_ops.begin(),
                               ctx.chain_ops.begin() + std::min<size_t>(4, ctx.chain_ops.size()));
  struct Case {
    std::string name, model;
    ModelInputs inputs;
    std::vector<std::string> outputs;
  };
  std::vector<Case> cases;
  cases.push_back({"If, then branch", IfModel(ops), IfInputs(true), {"Z"}});
  cases.push_back({"If, else branch", IfModel(ops), IfInputs(false), {"Z"}});
  cases.push_back({"Loop, 3 iterations (carried value, stacked outputs)",
                   LoopModel(ops),
                   LoopInputs(3),
                   {"Z", "Zs"}});
  cases.push_back({"Loop, 0 iterations", LoopModel(ops), LoopInputs(0), {"Z", "Zs"}});
  cases.push_back(
      {"Scan, 2 steps (state, stacked outputs)", ScanModel(ops), ScanInputs(), {"S", "Ss"}});
  for (const Case& c : cases) {
    std::vector<Value> expected;
    try {
      expected = RunModel(*ctx.env, c.model, Context::CpuSession(), c.inputs);
    } catch (const std::exception& e) {
      ctx.Add(area, c.name, CheckStatus::kSkipped,
              std::string("the CPU EP cannot run it: ") + e.what());
      continue;
    }
    try {
      AssignmentReport placement;
      const std::vector<Value> actual =
          RunModel(*ctx.env, c.model, ctx.EpSession(), c.inputs, &placement);
      std::string why;
      if (!SameOutputs(actual, expected, c.outputs, kCpuRtol, kCpuAtol, &why)) {
        ctx.Add(area, c.name, CheckStatus::kFailed, why);
        continue;
      }
      const size_t body = BodyNodesOnEp(ctx, placement);
      if (body == 0)
        ctx.Add(area, c.name, CheckStatus::kSkipped,
                "outputs equal, but the EP took no node of the bodies");
      else
        ctx.Add(area, c.name, CheckStatus::kPassed,
                std::to_string(body) + " body nodes on the EP, outputs equal to the CPU EP");
    } catch (const std::exception& e) {
      ctx.Add(area, c.name, CheckStatus::kFailed, e.what());
    }
  }
}

void CheckPrepack(Context& ctx) {
  const char* area = "prepack";
  if (!ctx.loaded) return;
  bool claimed = false, packed = false;
  for (const std::string& op : WeightOpCandidates()) {
    const std::string model = WeightModel(op);
    const ModelInputs in = WeightInputs(op);
    try {
      SessionOptions plan_options = ctx.EpSession();
      if (ctx.NodesOnEp(PlanPlacement(*ctx.env, model.data(), model.size(), &plan_options)) == 0)
        continue;
    } catch (const std::exception&) {
      continue;
    }
    claimed = true;
    const std::string name = op + " with constant weights, two sessions";
    try {
      const std::vector<Value> expected = RunModel(*ctx.env, model, Context::CpuSession(), in);
      SessionOptions options = ctx.EpSession();
      Session first(*ctx.env, model.data(), model.size(), &options);
      std::string why;
      bool same = true;
      for (int run = 0; run < 2 && same; ++run)
        same = SameOutputs(first.Run(in.names, in.pointers()), expected, {"Z"}, kCpuRtol, kCpuAtol,
                           &why);
      Session second(*ctx.env, model.data(), model.size(), &options);
      if (same)
        same = SameOutputs(second.Run(in.names, in.pointers()), expected, {"Z"}, kCpuRtol, kCpuAtol,
                           &why);
      const int64_t weights = first.statistic("prepack.weights");
      const int64_t hits = second.statistic("prepack.shared_hits");
      packed |= weights > 0;
      ctx.Add(area, name, same ? CheckStatus::kPassed : CheckStatus::kFailed,
              same ? (weights > 0
                          ? std::to_string(weights) + " weights packed, " + std::to_string(hits) +
                                " reused by the second session; outputs equal to the CPU EP"
                          : "no weight packed; outputs equal to the CPU EP")
                   : why);
    } catch (const std::exception& e) {
      ctx.Add(area, name, CheckStatus::kFailed, e.what());
    }
  }
  if (!claimed)
    ctx.Add(area, "weight packing", CheckStatus::kSkipped,
            "the EP claims none of MatMul, Gemm, Conv with constant weights");
  else if (!packed)
    ctx.Add(area, "weight packing", CheckStatus::kSkipped,
            "no kernel of the EP packed a constant weight (PrePackWeight not used)");
}

}  // namespace nxrt::cli::certify
