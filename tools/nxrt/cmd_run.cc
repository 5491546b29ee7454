// nxrt run MODEL [--input NAME=FILE.npy ...] [--output-dir DIR] [--threads N] [--repeat N]
//                [--ep-library PATH ...] [--virtual TYPE[:key=value,...] ...]
//                [--ep NAME[:key=value,...] ... | --policy NAME] [--fallback allow|warn|forbid]
//                [--profile FILE] [--timeout SECONDS] [--memory-limit MB]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include "nxrt/commands.h"
#include "nxrt/ep_args.h"
#include "nxrt/npy.h"
#include "nxrt/value_format.h"

namespace nxrt::cli {
namespace {

struct RunArgs {
  std::string model;
  std::vector<std::pair<std::string, std::string>> inputs;  // name -> .npy path
  std::string output_dir;
  int threads = 0;
  int repeat = 1;
  std::vector<std::string> ep_libraries;              // registered in order
  std::vector<EpSpec> eps;                            // appended in priority order
  std::vector<VirtualDeviceRequest> virtual_devices;  // asked of every library
  std::optional<NxEpSelectionPolicy> policy;
  std::optional<NxFallbackMode> fallback;
  std::string profile;         // Chrome trace JSON of the session (creation and every run)
  double timeout_seconds = 0;  // time limit of all runs together; 0 = none
  size_t memory_limit = 0;     // bytes of tensors the runs may hold; 0 = none
};

double ParseSeconds(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(v) || v <= 0 || v > 1e9)
    throw UsageError(flag + " expects a number of seconds > 0, got '" + text + "'");
  return v;
}

RunArgs ParseRunArgs(const std::vector<std::string>& args) {
  RunArgs r;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--input") {
      std::string spec = TakeValue(args, i, a);
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError("--input expects NAME=FILE.npy, got '" + spec + "'");
      r.inputs.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (a == "--output-dir") {
      r.output_dir = TakeValue(args, i, a);
    } else if (a == "--threads") {
      r.threads = ParseInt(TakeValue(args, i, a), a, 1, 1024);
    } else if (a == "--repeat") {
      r.repeat = ParseInt(TakeValue(args, i, a), a, 1, 1000000);
    } else if (a == "--ep-library") {
      r.ep_libraries.push_back(TakeValue(args, i, a));
    } else if (a == "--ep") {
      r.eps.push_back(ParseEpSpec(TakeValue(args, i, a)));
    } else if (a == "--virtual") {
      r.virtual_devices.push_back(ParseVirtualSpec(TakeValue(args, i, a)));
    } else if (a == "--policy") {
      r.policy = ParsePolicyName(TakeValue(args, i, a));
    } else if (a == "--fallback") {
      r.fallback = ParseFallbackName(TakeValue(args, i, a));
    } else if (a == "--profile") {
      r.profile = TakeValue(args, i, a);
      if (r.profile.empty()) throw UsageError("--profile needs a file name");
    } else if (a == "--timeout") {
      r.timeout_seconds = ParseSeconds(TakeValue(args, i, a), a);
    } else if (a == "--memory-limit") {
      r.memory_limit = static_cast<size_t>(ParseInt(TakeValue(args, i, a), a, 1, 1 << 30)) << 20;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option '" + a + "'");
    } else if (r.model.empty()) {
      r.model = a;
    } else {
      throw UsageError("unexpected argument '" + a + "'");
    }
  }
  if (r.model.empty()) throw UsageError("missing MODEL (nxrt run MODEL [options])");
  if (r.policy && !r.eps.empty()) throw UsageError("--ep and --policy exclude each other");
  if (!r.virtual_devices.empty() && r.ep_libraries.empty())
    throw UsageError("--virtual asks EP libraries for devices: give them with --ep-library");
  return r;
}

// Every byte other than an ASCII letter, digit, '-', '_' or '.' becomes '_'.
std::string SanitizeFileName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) c = '_';
  }
  return out;
}

// Complete events in a profile the runtime wrote (one per "ph":"X").
size_t CountProfileEvents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t n = 0;
  for (size_t at = text.find("\"ph\":\"X\""); at != std::string::npos;
       at = text.find("\"ph\":\"X\"", at + 1))
    ++n;
  return n;
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// Peak resident set size of this process so far, in MB: VmHWM of /proc/self/status, which
// starts afresh at exec. getrusage's ru_maxrss (the fallback where /proc is missing) keeps the
// peak of the process that started nxrt from before its exec (427 MB for nxrt started by a
// Python process holding 400 MB), so it can only be trusted when the parent is small.
double PeakRssMb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  RunArgs r = ParseRunArgs(args);
  Env env(NX_LOG_WARNING);
  RegisterLibraries(env, r.ep_libraries, r.virtual_devices);
  SessionOptions options;
  if (r.threads > 0) options.SetIntraOpThreads(r.threads);
  for (const EpSpec& ep : r.eps) options.AppendEp(ep.name, ep.options);
  if (r.policy) options.SetEpSelectionPolicy(*r.policy);
  if (r.fallback) options.SetFallback(*r.fallback);
  if (!r.profile.empty()) options.SetProfileFile(r.profile);
  if (r.memory_limit > 0) options.SetMemoryLimit(r.memory_limit);
  auto t0 = std::chrono::steady_clock::now();
  Session session(env, r.model, &options);
  double create_ms = Ms(std::chrono::steady_clock::now() - t0);

  std::map<std::string, std::string> given(r.inputs.begin(), r.inputs.end());
  if (given.size() != r.inputs.size()) throw UsageError("an input is given twice");
  for (const auto& [name, path] : given) {
    bool known = false;
    for (size_t i = 0; i < session.input_count(); ++i)
      known = known || session.input_name(i) == name;
    if (!known) throw UsageError("the model has no input named '" + name + "'");
  }

  std::printf("model: %s\n", r.model.c_str());
  std::vector<std::string> names;
  std::vector<Value> values;
  for (size_t i = 0; i < session.input_count(); ++i) {
    std::string name = session.input_name(i);
    auto it = given.find(name);
    if (it != given.end()) {
      values.push_back(ReadNpy(it->second));
      std::printf("input %s: %s from %s\n", name.c_str(), Describe(values.back()).c_str(),
                  it->second.c_str());
    } else {
      NxTypeInfo info = session.input_type(i);
      if (info.kind != NX_VALUE_TENSOR)
        throw UsageError("input '" + name + "' is not a tensor; give it with --input");
      std::vector<int64_t> dims;
      for (size_t d = 0; d < info.rank; ++d) dims.push_back(info.dims[d] < 0 ? 1 : info.dims[d]);
      NxElementType type =
          info.element_type == NX_TYPE_UNDEFINED ? NX_TYPE_FLOAT : info.element_type;
      values.push_back(RandomTensor(type, dims, 1234 + i));
      std::printf("input %s: %s (random)\n", name.c_str(), Describe(values.back()).c_str());
    }
    names.push_back(name);
  }
  std::vector<const Value*> pointers;
  for (const Value& v : values) pointers.push_back(&v);

  // --timeout bounds all runs together: each run gets what is left of it.
  RunOptions run_options;
  const auto runs_start = std::chrono::steady_clock::now();
  auto run_once = [&] {
    if (r.timeout_seconds > 0) {
      const double used =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - runs_start).count();
      run_options.SetTimeout(std::max(r.timeout_seconds - used, 1e-9));
    }
    try {
      return session.Run(run_options, names, pointers);
    } catch (const Exception& e) {
      if (e.code() != NX_CANCELLED || r.timeout_seconds <= 0) throw;
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", r.timeout_seconds);
      throw std::runtime_error(std::string("the time limit of ") + limit +
                               " s (--timeout) was reached: " + e.what());
    }
  };
  auto start = std::chrono::steady_clock::now();
  std::vector<Value> outputs = run_once();
  double first_ms = Ms(std::chrono::steady_clock::now() - start);
  std::vector<double> times{first_ms};
  if (r.repeat > 1) {
    times.clear();
    for (int k = 0; k < r.repeat; ++k) {
      auto s = std::chrono::steady_clock::now();
      outputs = run_once();
      times.push_back(Ms(std::chrono::steady_clock::now() - s));
    }
  }

  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string name = session.output_name(i);
    std::printf("output %s: %s = %s\n", name.c_str(), Describe(outputs[i]).c_str(),
                FirstValues(outputs[i], 8).c_str());
  }
  if (!r.output_dir.empty()) {
    std::filesystem::create_directories(r.output_dir);
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string path = (std::filesystem::path(r.output_dir) /
                          (SanitizeFileName(session.output_name(i)) + ".npy"))
                             .string();
      WriteNpy(path, outputs[i]);
    }
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.size() % 2
                      ? sorted[sorted.size() / 2]
                      : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  double mean = 0;
  for (double t : times) mean += t;
  mean /= static_cast<double>(times.size());
  std::printf("eps:");
  for (size_t e = 0; e < session.ep_count(); ++e) {
    std::printf(" %s=%zu", session.ep_name(e).c_str(), session.ep_node_count(e));
  }
  std::printf(" nodes\n");
  std::printf("ep devices:");
  for (size_t e = 0; e < session.ep_count(); ++e) {
    std::vector<EpDevice> devices = session.ep_devices(e);
    std::printf(" %s=", session.ep_name(e).c_str());
    if (devices.empty()) std::printf("(none)");
    for (size_t d = 0; d < devices.size(); ++d)
      std::printf("%s[%s]", d ? "," : "", DescribeHardware(devices[d].hardware()).c_str());
  }
  std::printf("\n");
  std::printf("copies: %lld\n", static_cast<long long>(session.statistic("copies")));
  // Streams the EPs queue work on (plugin ABI 13); the line is absent when everything is
  // synchronous.
  if (const int64_t streams = session.statistic("streams"); streams > 0)
    std::printf("streams: %lld\n", static_cast<long long>(streams));
  // oneDNN reference implementations the EPs kept (the CPU EP avoids them; each is also named
  // in a warning): "reference primitives: CPU=0".
  std::string reference;
  for (size_t e = 0; e < session.ep_count(); ++e) {
    try {
      const int64_t n = session.statistic("ep." + session.ep_name(e) + ".reference_primitives");
      reference += " " + session.ep_name(e) + "=" + std::to_string(n);
    } catch (const Exception& ex) {
      if (ex.code() != NX_NOT_FOUND) throw;  // an EP that keeps no such counter
    }
  }
  if (!reference.empty()) std::printf("reference primitives:%s\n", reference.c_str());
  std::printf(
      "time: runs=%zu median_ms=%.3f min_ms=%.3f mean_ms=%.3f first_ms=%.3f create_ms=%.1f "
      "peak_rss_mb=%.1f\n",
      times.size(), median, sorted.front(), mean, first_ms, create_ms, PeakRssMb());
  if (!r.profile.empty()) {
    session.EndProfiling();
    std::printf("profile: %s (%zu events)\n", r.profile.c_str(), CountProfileEvents(r.profile));
  }
  return 0;
}

}  // namespace nxrt::cli
