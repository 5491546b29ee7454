// What the areas of `nxrt certify` share: the env holding the EP library under test, how to
// make sessions that put work on that EP (or on the CPU EP only, as the reference), and what
// earlier areas learned (which elementwise ops the EP claims, node tests it passed).
#pragma once

#include <filesystem>
#include <memory>
#include <nxrt/nxrt.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nxrt/certify_report.h"
#include "nxrt/ep_args.h"

namespace nxrt::cli::certify {

struct Options {
  std::string library;
  std::optional<EpSpec> ep;  // --ep; else the library's only EP
  std::vector<VirtualDeviceRequest> virtual_devices;
  std::vector<std::string> node_test_dirs;  // empty: the default folders that exist
  std::string report_file;                  // .json or .html; empty: none
  std::filesystem::path work_dir;           // scratch files (compiled models)
  int threads = 8;                          // concurrent runs in the thread-safety area
  int runs = 20;                            // runs per thread
  bool verbose = false;
};

// Float tolerances: against the ONNX suite's expected outputs as the suite compares, against
// the CPU EP a little looser (different summation orders), between runs of one session exact.
constexpr double kExpectedRtol = 1e-3, kExpectedAtol = 1e-7;
constexpr double kCpuRtol = 1e-3, kCpuAtol = 1e-5;

struct Context {
  Options options;
  CertifyReport report;
  std::unique_ptr<Env> env;
  const std::string registration = "certify";
  std::string ep;  // the EP under test
  KeyValueList ep_options;
  const NxMemoryInfo* memory = nullptr;  // the EP's memory
  bool device_memory = false;            // not host memory
  bool loaded = false;                   // the library registered and the EP was found
  bool ort_plugin = false;  // the EP comes from an onnxruntime plugin library (ORT adapter)
  std::vector<std::string> chain_ops;               // elementwise ops it claims (certify_models.h)
  std::vector<std::filesystem::path> passed_cases;  // node tests run wholly on the EP, passed

  void Add(const std::string& area, const std::string& name, CheckStatus status,
           const std::string& detail = "") {
    report.Add(area, name, status, detail);
  }

  // Registers the library (with the virtual-device requests) in a new env.
  std::unique_ptr<Env> NewEnv() const;
  // The EP under test first, then the CPU EP for what it leaves (unless `fallback` forbids).
  SessionOptions EpSession(NxFallbackMode fallback = NX_FALLBACK_ALLOW, int threads = 1) const;
  // The CPU EP alone: the reference.
  static SessionOptions CpuSession();
  // Nodes (main graph and bodies) the report places on the EP under test, and in all.
  size_t NodesOnEp(const AssignmentReport& r) const;
  static size_t NodesInAll(const AssignmentReport& r);
  bool HasFusedGroup(const AssignmentReport& r) const;
};

// Whether two runs' outputs match (same count; each as Matches compares).
bool SameOutputs(const std::vector<Value>& actual, const std::vector<Value>& expected,
                 const std::vector<std::string>& names, double rtol, double atol, std::string* why);

// Deterministic inputs for certify_models.h's models.
struct ModelInputs {
  std::vector<std::string> names;
  std::vector<Value> values;
  std::vector<const Value*> pointers() const {
    std::vector<const Value*> p;
    for (const Value& v : values) p.push_back(&v);
    return p;
  }
};
ModelInputs ChainInputs();
ModelInputs IfInputs(bool cond);
ModelInputs LoopInputs(int64_t trips);
ModelInputs ScanInputs();
ModelInputs WeightInputs(const std::string& op);

// The areas, in order. Each adds its checks to ctx.report.
void CheckAbi(Context& ctx);
void CheckOps(Context& ctx);
void CheckCopies(Context& ctx);
void CheckControlFlow(Context& ctx);
void CheckPrepack(Context& ctx);
void CheckThreads(Context& ctx);
void CheckStreams(Context& ctx);
void CheckCompile(Context& ctx);
void CheckRelease(Context& ctx);

}  // namespace nxrt::cli::certify
