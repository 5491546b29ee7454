// nxrt conformance DIR...: runs ONNX backend test case folders (model.onnx plus
// test_data_set_*/input_*.pb and output_*.pb) and compares like the ONNX suite does.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <onnx/onnx_pb.h>
#include <nxrt/nxrt.hpp>

#include "nxrt/commands.h"
#include "nxrt/value_format.h"

namespace nxrt::cli {
namespace {

namespace fs = std::filesystem;

struct ConformanceArgs {
  std::vector<std::string> dirs;
  bool verbose = false;
  std::string expect_file;
  std::string write_passing;
  int threads = 1;
  double rtol = 1e-3;
  double atol = 1e-7;
};

ConformanceArgs ParseArgs(const std::vector<std::string>& args) {
  ConformanceArgs c;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--verbose" || a == "-v") c.verbose = true;
    else if (a == "--expect") c.expect_file = TakeValue(args, i, a);
    else if (a == "--write-passing") c.write_passing = TakeValue(args, i, a);
    else if (a == "--threads") c.threads = ParseInt(TakeValue(args, i, a), a, 1, 1024);
    else if (!a.empty() && a[0] == '-') throw UsageError("unknown option '" + a + "'");
    else c.dirs.push_back(a);
  }
  if (c.dirs.empty()) throw UsageError("usage: nxrt conformance DIR... [--verbose] [--expect FILE]");
  return c;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Case folders under the given folders (a folder holding model.onnx is one case).
std::vector<fs::path> FindCases(const std::vector<std::string>& dirs) {
  std::vector<fs::path> cases;
  for (const std::string& d : dirs) {
    fs::path dir(d);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw Exception(NX_NOT_FOUND, d + ": not a folder");
    if (fs::exists(dir / "model.onnx", ec)) {
      cases.push_back(dir);
      continue;
    }
    std::vector<fs::path> sub;
    for (const auto& entry : fs::directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec)) {
      if (fs::is_directory(entry.path(), ec) && fs::exists(entry.path() / "model.onnx", ec)) sub.push_back(entry.path());
    }
    std::sort(sub.begin(), sub.end());
    cases.insert(cases.end(), sub.begin(), sub.end());
  }
  return cases;
}

NxValueKind KindOf(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) return NX_VALUE_SEQUENCE;
  if (t.has_optional_type()) return NX_VALUE_OPTIONAL;
  return NX_VALUE_TENSOR;
}

struct CaseResult {
  enum Status { kPassed, kFailed, kSkipped } status = kPassed;
  std::string reason;
  std::set<std::string> ops;
};

void CollectOps(const onnx::GraphProto& g, std::set<std::string>& ops) {
  for (const auto& n : g.node()) {
    ops.insert((n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".") + n.op_type());
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectOps(a.g(), ops);
      for (const auto& sg : a.graphs()) CollectOps(sg, ops);
    }
  }
}

CaseResult RunCase(Env& env, const fs::path& dir, const ConformanceArgs& args) {
  CaseResult result;
  std::string model_bytes = ReadFile(dir / "model.onnx");
  onnx::ModelProto model;
  if (!model.ParseFromString(model_bytes)) {
    result.status = CaseResult::kFailed;
    result.reason = "model.onnx does not parse";
    return result;
  }
  CollectOps(model.graph(), result.ops);
  std::vector<fs::path> data_sets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      data_sets.push_back(entry.path());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  if (data_sets.empty()) {
    result.status = CaseResult::kSkipped;
    result.reason = "no test_data_set_* folder";
    return result;
  }
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& i : model.graph().input())
    if (!initializers.count(i.name())) inputs.push_back(&i);

  try {
    SessionOptions options;
    options.SetIntraOpThreads(args.threads);
    options.SetLogLevel(NX_LOG_ERROR);
    std::string path = (dir / "model.onnx").string();
    Session session(env, path, &options);
    for (const fs::path& ds : data_sets) {
      std::vector<std::string> names;
      std::vector<Value> values;
      for (size_t i = 0;; ++i) {
        fs::path file = ds / ("input_" + std::to_string(i) + ".pb");
        if (!fs::exists(file, ec)) break;
        if (i >= inputs.size()) throw Exception(NX_INVALID_ARGUMENT, "more input files than model inputs");
        std::string bytes = ReadFile(file);
        values.push_back(Value::FromProto(KindOf(inputs[i]->type()), bytes.data(), bytes.size()));
        names.push_back(inputs[i]->name());
      }
      std::vector<const Value*> pointers;
      for (const Value& v : values) pointers.push_back(&v);
      std::vector<std::string> out_names;
      std::vector<Value> expected;
      for (size_t i = 0;; ++i) {
        fs::path file = ds / ("output_" + std::to_string(i) + ".pb");
        if (!fs::exists(file, ec)) break;
        if (static_cast<int>(i) >= model.graph().output_size()) throw Exception(NX_INVALID_ARGUMENT, "more output files than model outputs");
        std::string bytes = ReadFile(file);
        expected.push_back(Value::FromProto(KindOf(model.graph().output(static_cast<int>(i)).type()), bytes.data(), bytes.size()));
        out_names.push_back(model.graph().output(static_cast<int>(i)).name());
      }
      if (out_names.empty()) throw Exception(NX_INVALID_ARGUMENT, "no output files");
      std::vector<Value> actual = session.Run(names, pointers, out_names);
      for (size_t i = 0; i < expected.size(); ++i) {
        std::string why;
        if (!Matches(actual[i].get(), expected[i].get(), args.rtol, args.atol, &why)) {
          result.status = CaseResult::kFailed;
          result.reason = ds.filename().string() + " output '" + out_names[i] + "': " + why;
          return result;
        }
      }
    }
  } catch (const std::exception& e) {
    result.status = CaseResult::kFailed;
    result.reason = e.what();
  }
  return result;
}

std::set<std::string> ReadList(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Exception(NX_NOT_FOUND, path + ": cannot open the expectation list");
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    size_t start = line.find_first_not_of(" \t");
    if (start != std::string::npos) names.insert(line.substr(start));
  }
  return names;
}

}  // namespace

int ConformanceCommand(const std::vector<std::string>& raw_args) {
  ConformanceArgs args = ParseArgs(raw_args);
  std::vector<fs::path> cases = FindCases(args.dirs);
  Env env(NX_LOG_ERROR);
  struct OpStats {
    int passed = 0, failed = 0, skipped = 0;
  };
  std::map<std::string, OpStats> per_op;
  int passed = 0, failed = 0, skipped = 0;
  std::vector<std::string> passing;
  std::map<std::string, std::string> failures;
  for (const fs::path& dir : cases) {
    std::string name = dir.filename().string();
    CaseResult r = RunCase(env, dir, args);
    for (const std::string& op : r.ops) {
      OpStats& s = per_op[op];
      (r.status == CaseResult::kPassed ? s.passed : r.status == CaseResult::kFailed ? s.failed : s.skipped)++;
    }
    if (r.status == CaseResult::kPassed) {
      ++passed;
      passing.push_back(name);
    } else if (r.status == CaseResult::kFailed) {
      ++failed;
      failures[name] = r.reason;
      if (args.verbose) {
        std::string reason = r.reason;
        for (char& c : reason)
          if (c == '\n') c = ' ';
        std::printf("FAIL %s: %s\n", name.c_str(), reason.c_str());
      }
    } else {
      ++skipped;
      if (args.verbose) std::printf("SKIP %s: %s\n", name.c_str(), r.reason.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("\n%-32s %7s %7s %7s\n", "operator", "passed", "failed", "skipped");
  for (const auto& [op, s] : per_op) std::printf("%-32s %7d %7d %7d\n", op.c_str(), s.passed, s.failed, s.skipped);
  std::printf("\n");
  if (!args.write_passing.empty()) {
    std::ofstream out(args.write_passing);
    for (const std::string& n : passing) out << n << "\n";
  }
  int status = 0;
  if (!args.expect_file.empty()) {
    std::set<std::string> expected = ReadList(args.expect_file);
    std::set<std::string> present;
    for (const fs::path& dir : cases) present.insert(dir.filename().string());
    int regressions = 0;
    for (const std::string& n : expected) {
      if (!present.count(n)) {
        std::printf("MISSING %s: listed in %s but not found\n", n.c_str(), args.expect_file.c_str());
        ++regressions;
      } else if (failures.count(n)) {
        std::printf("REGRESSION %s: %s\n", n.c_str(), failures[n].c_str());
        ++regressions;
      }
    }
    std::printf("expectations: %zu listed, %d regressed\n", expected.size(), regressions);
    if (regressions) status = 1;
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  if (status) std::fprintf(stderr, "nxrt conformance: error: tests listed in %s failed\n", args.expect_file.c_str());
  return status;
}

}  // namespace nxrt::cli
