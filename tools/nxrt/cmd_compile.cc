// nxrt compile MODEL -o OUT.onnx [--ep NAME[:k=v,...] ... | --policy NAME] [--fallback MODE]
//                    [--ep-library PATH ...] [--virtual TYPE[:k=v,...] ...] [--embed|--external]
//                    [--keep-original]
// Compiles a model ahead of time for the chosen EPs (virtual devices included: the hardware need
// not be present) and writes it with each compiled group as an EPContext node
// (NxEnv_CompileModel). One progress line per group, then a summary line.
#include <cstdio>
#include <nxrt/nxrt.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nxrt/commands.h"
#include "nxrt/ep_args.h"

namespace nxrt::cli {

int CompileCommand(const std::vector<std::string>& args) {
  std::string model, output;
  std::vector<std::string> libraries;
  std::vector<VirtualDeviceRequest> virtual_devices;
  std::vector<EpSpec> eps;
  std::optional<NxEpSelectionPolicy> policy;
  std::optional<NxFallbackMode> fallback;
  uint32_t flags = NX_COMPILE_EMBED_PAYLOADS;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--output")
      output = TakeValue(args, i, a);
    else if (a == "--ep-library")
      libraries.push_back(TakeValue(args, i, a));
    else if (a == "--ep")
      eps.push_back(ParseEpSpec(TakeValue(args, i, a)));
    else if (a == "--virtual")
      virtual_devices.push_back(ParseVirtualSpec(TakeValue(args, i, a)));
    else if (a == "--policy")
      policy = ParsePolicyName(TakeValue(args, i, a));
    else if (a == "--fallback")
      fallback = ParseFallbackName(TakeValue(args, i, a));
    else if (a == "--embed")
      flags &= ~NX_COMPILE_EXTERNAL_PAYLOADS;
    else if (a == "--external")
      flags = (flags & NX_COMPILE_KEEP_ORIGINAL_NODES) | NX_COMPILE_EXTERNAL_PAYLOADS;
    else if (a == "--keep-original")
      flags |= NX_COMPILE_KEEP_ORIGINAL_NODES;
    else if (!a.empty() && a[0] == '-')
      throw UsageError("unknown option '" + a + "'");
    else if (model.empty())
      model = a;
    else
      throw UsageError("unexpected argument '" + a + "'");
  }
  if (model.empty()) throw UsageError("missing MODEL (nxrt compile MODEL -o OUT.onnx [options])");
  if (output.empty()) throw UsageError("missing -o OUT.onnx");
  if (policy && !eps.empty()) throw UsageError("--ep and --policy exclude each other");
  if (!virtual_devices.empty() && libraries.empty())
    throw UsageError("--virtual asks EP libraries for devices: give them with --ep-library");

  Env env(NX_LOG_ERROR);
  RegisterLibraries(env, libraries, virtual_devices);
  SessionOptions options;
  for (const EpSpec& ep : eps) options.AppendEp(ep.name, ep.options);
  if (policy) options.SetEpSelectionPolicy(*policy);
  if (fallback) options.SetFallback(*fallback);
  const size_t saved =
      env.CompileModel(model, &options, output, flags, [](const std::string& line) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      });
  std::printf("compiled %s -> %s: %zu group%s saved as EPContext nodes (%s%s)\n", model.c_str(),
              output.c_str(), saved, saved == 1 ? "" : "s",
              (flags & NX_COMPILE_EXTERNAL_PAYLOADS) ? "payloads in files next to it" : "embedded",
              (flags & NX_COMPILE_KEEP_ORIGINAL_NODES) ? ", original nodes kept" : "");
  return 0;
}

}  // namespace nxrt::cli
