// The "compile" area of `nxrt certify`: for an EP that compiles groups, a model compiled ahead of
// time (NxEnv_CompileModel, payloads embedded and in files next to it) must be judged compatible
// with the device it was compiled for and, loaded in a fresh env with the library registered
// anew, run its EPContext nodes on the EP with the outputs of the original model on the CPU EP.
#include <fstream>

#include "nxrt/certify_context.h"
#include "nxrt/certify_models.h"

namespace nxrt::cli::certify {
namespace {

constexpr const char* kArea = "compile";

const char* CompatibilityName(NxCompatibility c) {
  switch (c) {
    case NX_COMPATIBILITY_OPTIMAL:
      return "optimal";
    case NX_COMPATIBILITY_SUPPORTED_SUBOPTIMAL:
      return "supported, suboptimal";
    case NX_COMPATIBILITY_NEEDS_RECOMPILATION:
      return "needs recompilation";
    case NX_COMPATIBILITY_UNSUPPORTED:
      return "unsupported";
    default:
      return "not applicable";
  }
}

size_t ContextNodesOnEp(const Context& ctx, const AssignmentReport& r) {
  size_t n = 0;
  for (const AssignedSubgraph& s : r.subgraphs)
    if (s.ep_name == ctx.ep)
      for (const AssignedNode& node : s.nodes) n += node.op_type == "EPContext";
  return n;
}

}  // namespace

void CheckCompile(Context& ctx) {
  if (!ctx.loaded) return;
  if (ctx.chain_ops.empty()) {
    ctx.Add(kArea, "compile and load", CheckStatus::kSkipped,
            "the EP claims none of the elementwise ops the test model is made of");
    return;
  }
  const std::string model = ChainModel(ctx.chain_ops);
  const ModelInputs in = ChainInputs();
  std::vector<Value> expected;
  try {
    SessionOptions plan_options = ctx.EpSession();
    if (!ctx.HasFusedGroup(PlanPlacement(*ctx.env, model.data(), model.size(), &plan_options))) {
      ctx.Add(kArea, "compile and load", CheckStatus::kSkipped,
              "the EP runs the test model with kernels and compiles no group: nothing to save");
      return;
    }
    SessionOptions cpu_options = Context::CpuSession();
    Session cpu(*ctx.env, model.data(), model.size(), &cpu_options);
    expected = cpu.Run(in.names, in.pointers());
  } catch (const std::exception& e) {
    ctx.Add(kArea, "compile and load", CheckStatus::kFailed, e.what());
    return;
  }
  const std::filesystem::path source = ctx.options.work_dir / "certify_chain.onnx";
  std::ofstream(source, std::ios::binary) << model;

  for (const bool embed : {true, false}) {
    const std::string how = embed ? "payload embedded" : "payload in a file next to the model";
    const std::filesystem::path out =
        ctx.options.work_dir /
        (embed ? "certify_chain_embedded.onnx" : "certify_chain_external.onnx");
    size_t saved = 0;
    try {
      SessionOptions options = ctx.EpSession();
      saved =
          ctx.env->CompileModel(source.string(), &options, out.string(),
                                embed ? NX_COMPILE_EMBED_PAYLOADS : NX_COMPILE_EXTERNAL_PAYLOADS);
    } catch (const std::exception& e) {
      ctx.Add(kArea, "compile, " + how, CheckStatus::kFailed, e.what());
      continue;
    }
    if (saved == 0) {
      ctx.Add(kArea, "compile, " + how, CheckStatus::kSkipped,
              "no group saved: the EP compiles groups but does not export them "
              "(ExportCompiledGroup)");
      return;
    }
    ctx.Add(kArea, "compile, " + how, CheckStatus::kPassed,
            std::to_string(saved) + " EPContext node(s) written");
    try {
      // A fresh env, as in a new process: the library registered anew, nothing cached.
      std::unique_ptr<Env> fresh = ctx.NewEnv();
      if (embed) {
        std::string answers;
        bool suits = false;
        for (const EpDevice& d : fresh->ep_devices()) {
          if (d.ep_name() != ctx.ep) continue;
          const NxCompatibility c = fresh->model_compatibility(out.string(), d);
          suits |= c == NX_COMPATIBILITY_OPTIMAL || c == NX_COMPATIBILITY_SUPPORTED_SUBOPTIMAL;
          answers += (answers.empty() ? "" : ", ") + DescribeHardware(d.hardware()) + ": " +
                     CompatibilityName(c);
        }
        if (answers.empty())
          ctx.Add(kArea, "compatibility of the saved payload", CheckStatus::kSkipped,
                  "the EP has no EP device to ask about");
        else
          ctx.Add(kArea, "compatibility of the saved payload",
                  suits ? CheckStatus::kPassed : CheckStatus::kFailed, answers);
      }
      SessionOptions options = ctx.EpSession();
      Session session(*fresh, out.string(), &options);
      const size_t restored = ContextNodesOnEp(ctx, session.assignment_report());
      std::string why;
      const bool same = SameOutputs(session.Run(in.names, in.pointers()), expected, {"Z"}, kCpuRtol,
                                    kCpuAtol, &why);
      const bool ok = same && restored == saved;
      ctx.Add(kArea, "load in a fresh env and run, " + how,
              ok ? CheckStatus::kPassed : CheckStatus::kFailed,
              !same ? why
              : restored != saved
                  ? std::to_string(restored) + " of " + std::to_string(saved) +
                        " EPContext nodes placed on the EP"
                  : "EPContext nodes on the EP, outputs equal to the original model on the CPU EP");
    } catch (const std::exception& e) {
      ctx.Add(kArea, "load in a fresh env and run, " + how, CheckStatus::kFailed, e.what());
    }
  }
}

}  // namespace nxrt::cli::certify
