// The "abi" and "release" areas of `nxrt certify`: the library loads and its tables are accepted,
// the factory says who it is, its EP devices and memory, an EP is created for sessions and
// answers options it does not know; at the end, its device memory comes back and the library
// unregisters and registers again in the same process.
#include <nxrt/nxrt_ep_api.h>

#include <regex>
#include <set>

#include "nxrt/certify_context.h"
#include "nxrt/certify_models.h"

namespace nxrt::cli::certify {
namespace {

constexpr const char* kArea = "abi";

std::string Join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// Which of the chain candidates the EP takes, asked by a dry-run placement per op.
void ProbeChainOps(Context& ctx) {
  for (const std::string& op : ChainOpCandidates()) {
    const std::string model = SingleOpModel(op);
    SessionOptions options = ctx.EpSession();
    try {
      AssignmentReport r = PlanPlacement(*ctx.env, model.data(), model.size(), &options);
      if (ctx.NodesOnEp(r) > 0) ctx.chain_ops.push_back(op);
    } catch (const std::exception&) {
      // An op the EP cannot place is simply not claimed; the session check below reports errors.
    }
  }
}

void CheckIdentity(Context& ctx, const std::vector<EpDevice>& devices) {
  if (devices.empty()) {
    ctx.Add(kArea, "vendor and version", CheckStatus::kSkipped,
            "the EP has no EP device, so its vendor and version are not reported");
    return;
  }
  ctx.report.vendor = devices[0].ep_vendor();
  ctx.report.ep_version = devices[0].metadata("version");
  static const std::regex semver(R"(^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]*)?$)");
  const bool ok = !ctx.report.vendor.empty() && std::regex_match(ctx.report.ep_version, semver);
  ctx.Add(kArea, "vendor and version", ok ? CheckStatus::kPassed : CheckStatus::kFailed,
          "vendor '" + ctx.report.vendor + "', version '" + ctx.report.ep_version + "'" +
              (ok ? "" : " (want a vendor name and a SemVer version such as 1.2.3)"));
}

void CheckDevices(Context& ctx, const std::vector<EpDevice>& devices) {
  std::string list;
  size_t virtual_count = 0;
  for (const EpDevice& d : devices) {
    const HardwareDevice hw = d.hardware();
    if (hw.is_virtual()) ++virtual_count;
    list += (list.empty() ? "" : "; ") + DescribeHardware(hw);
  }
  if (!ctx.options.virtual_devices.empty() && virtual_count == 0) {
    ctx.Add(kArea, "EP devices", CheckStatus::kFailed,
            "virtual devices were requested (--virtual) but the factory made none it supports" +
                (list.empty() ? std::string() : " (devices: " + list + ")"));
  } else if (devices.empty()) {
    ctx.Add(kArea, "EP devices", CheckStatus::kPassed, "none (the EP is used by name only)");
  } else {
    ctx.Add(kArea, "EP devices", CheckStatus::kPassed,
            std::to_string(devices.size()) + ": " + list);
  }
}

void CheckMemory(Context& ctx) {
  try {
    ctx.memory = ctx.env->ep_memory(ctx.ep);
    ctx.device_memory = ctx.memory != nullptr && ctx.memory->kind == NX_MEMORY_DEVICE;
    ctx.Add(kArea, "memory", CheckStatus::kPassed,
            ctx.device_memory ? std::string("device memory '") + ctx.memory->name +
                                    "' with an allocator and a data transfer"
                              : "host memory");
  } catch (const std::exception& e) {
    ctx.Add(kArea, "memory", CheckStatus::kFailed, e.what());
  }
}

void CheckSession(Context& ctx) {
  const std::string model =
      ChainModel(ctx.chain_ops.empty() ? std::vector<std::string>{"Add"} : ctx.chain_ops);
  try {
    SessionOptions options = ctx.EpSession();
    Session session(*ctx.env, model.data(), model.size(), &options);
    bool created = false;
    for (size_t i = 0; i < session.ep_count(); ++i) created |= session.ep_name(i) == ctx.ep;
    ctx.Add(
        kArea, "EP created for a session", created ? CheckStatus::kPassed : CheckStatus::kFailed,
        created ? "claims " + (ctx.chain_ops.empty() ? std::string("none") : Join(ctx.chain_ops)) +
                      " of the elementwise ops " + Join(ChainOpCandidates())
                : "the session does not list the EP");
  } catch (const std::exception& e) {
    ctx.Add(kArea, "EP created for a session", CheckStatus::kFailed, e.what());
  }

  // An option the EP cannot know: either refused with a message, or ignored.
  SessionOptions options;
  options.SetLogLevel(NX_LOG_ERROR);
  KeyValueList with_unknown = ctx.ep_options;
  with_unknown.emplace_back("nxrt_certify_unknown_option", "1");
  options.AppendEp(ctx.ep, with_unknown);
  try {
    Session session(*ctx.env, model.data(), model.size(), &options);
    ctx.Add(kArea, "unknown EP option", CheckStatus::kPassed, "ignored");
  } catch (const Exception& e) {
    const std::string message = e.what();
    const bool has_message = message.find_first_not_of(" :") != std::string::npos &&
                             message.find("nxrt_certify_unknown_option") != std::string::npos;
    ctx.Add(kArea, "unknown EP option", has_message ? CheckStatus::kPassed : CheckStatus::kFailed,
            has_message ? "refused: " + message
                        : "refused without naming the option: '" + message + "'");
  }
}

}  // namespace

void CheckAbi(Context& ctx) {
  ctx.report.host_version = Nx_GetVersionString();
  try {
    ctx.env = ctx.NewEnv();
    ctx.Add(kArea, "library registers", CheckStatus::kPassed,
            "both entry points found, factory tables accepted");
  } catch (const std::exception& e) {
    ctx.Add(kArea, "library registers", CheckStatus::kFailed, e.what());
    return;
  }

  std::vector<EpDevice> library_devices;
  std::set<std::string> names;
  for (const EpDevice& d : ctx.env->ep_devices()) {
    if (d.library() != ctx.registration) continue;
    library_devices.push_back(d);
    names.insert(d.ep_name());
  }
  if (ctx.options.ep) {
    ctx.ep = ctx.options.ep->name;
    ctx.ep_options = ctx.options.ep->options;
  } else if (names.size() == 1) {
    ctx.ep = *names.begin();
  } else {
    ctx.Add(kArea, "EP named", CheckStatus::kFailed,
            names.empty() ? "the library offers no EP device: name its EP with --ep NAME"
                          : "the library has several EPs (" +
                                Join(std::vector<std::string>(names.begin(), names.end())) +
                                "): choose one with --ep NAME");
    return;
  }
  ctx.report.ep = ctx.ep;

  int64_t abi = 0;
  try {
    abi = ctx.env->statistic("ep." + ctx.ep + ".abi_version");
  } catch (const std::exception& e) {
    ctx.Add(kArea, "EP named", CheckStatus::kFailed,
            "no EP '" + ctx.ep + "' in " + ctx.options.library + " (" + e.what() + ")");
    return;
  }
  ctx.report.abi_version = abi;
  int64_t ort_level = 0;
  try {
    ort_level = ctx.env->statistic("ep." + ctx.ep + ".ort_api_level");
  } catch (const std::exception&) {
    ort_level = 0;  // an nxrt EP library
  }
  if (ort_level > 0) {
    ctx.ort_plugin = true;
    ctx.Add(kArea, "onnxruntime plugin interface", CheckStatus::kPassed,
            "an onnxruntime plugin EP library built for API level " + std::to_string(ort_level) +
                ", hosted through nxrt's ORT plugin adapter (docs/ort-plugins.md)");
  } else {
    const bool abi_ok = abi >= 1 && abi <= NXRT_EP_API_VERSION;
    ctx.Add(kArea, "plugin ABI version", abi_ok ? CheckStatus::kPassed : CheckStatus::kFailed,
            "built against version " + std::to_string(abi) + "; this host reads versions 1 to " +
                std::to_string(NXRT_EP_API_VERSION));
  }

  std::vector<EpDevice> devices;
  for (const EpDevice& d : library_devices)
    if (d.ep_name() == ctx.ep) devices.push_back(d);
  CheckIdentity(ctx, devices);
  CheckDevices(ctx, devices);
  CheckMemory(ctx);
  ProbeChainOps(ctx);
  CheckSession(ctx);
  ctx.loaded = true;
}

void CheckRelease(Context& ctx) {
  const char* area = "release";
  if (!ctx.loaded) {
    ctx.Add(area, "release", CheckStatus::kSkipped, "the library did not load");
    return;
  }
  if (ctx.ort_plugin) {
    // After every check ran: what the plugin needed that nxrt's ORT host lacks.
    try {
      const int64_t calls = ctx.env->statistic("ep." + ctx.ep + ".ort_unimplemented_calls");
      ctx.Add("abi", "onnxruntime API slots nxrt lacks",
              calls == 0 ? CheckStatus::kPassed : CheckStatus::kFailed,
              calls == 0 ? "the plugin called only slots nxrt implements"
                         : std::to_string(calls) +
                               " calls to slots nxrt does not implement (a warning names each)");
    } catch (const std::exception& e) {
      ctx.Add("abi", "onnxruntime API slots nxrt lacks", CheckStatus::kFailed, e.what());
    }
  }
  if (ctx.device_memory) {
    try {
      const int64_t blocks = ctx.env->statistic("ep." + ctx.ep + ".device_blocks_alive");
      ctx.Add(area, "device memory returned",
              blocks == 0 ? CheckStatus::kPassed : CheckStatus::kFailed,
              blocks == 0 ? "no block held after every session and value was released"
                          : std::to_string(blocks) +
                                " blocks still held after every session and "
                                "value was released");
    } catch (const std::exception& e) {
      ctx.Add(area, "device memory returned", CheckStatus::kFailed, e.what());
    }
  } else {
    ctx.Add(area, "device memory returned", CheckStatus::kSkipped,
            "the EP computes in host memory");
  }

  // Unregister, register again in the same process, and run: a library must not keep state
  // (host tables, handles) from its first registration.
  const std::vector<std::string> ops =
      ctx.chain_ops.empty() ? std::vector<std::string>{"Add"} : ctx.chain_ops;
  const std::string model = ChainModel(ops);
  const ModelInputs in = ChainInputs();
  try {
    ctx.env->UnregisterEpLibrary(ctx.registration);
  } catch (const std::exception& e) {
    ctx.Add(area, "unregister", CheckStatus::kFailed, e.what());
    return;
  }
  ctx.Add(area, "unregister", CheckStatus::kPassed);
  try {
    ctx.env->RegisterEpLibrary(ctx.registration, ctx.options.library, ctx.options.virtual_devices);
    SessionOptions cpu_options = Context::CpuSession();
    Session cpu(*ctx.env, model.data(), model.size(), &cpu_options);
    const std::vector<Value> expected = cpu.Run(in.names, in.pointers());
    SessionOptions options = ctx.EpSession();
    Session session(*ctx.env, model.data(), model.size(), &options);
    const std::vector<Value> actual = session.Run(in.names, in.pointers());
    std::string why;
    const bool same = SameOutputs(actual, expected, {"Z"}, kCpuRtol, kCpuAtol, &why);
    ctx.Add(area, "register again and run", same ? CheckStatus::kPassed : CheckStatus::kFailed,
            same ? std::to_string(ctx.NodesOnEp(session.assignment_report())) + " nodes on the EP"
                 : why);
  } catch (const std::exception& e) {
    ctx.Add(area, "register again and run", CheckStatus::kFailed, e.what());
  }
}

}  // namespace nxrt::cli::certify
