// nxrt conformance DIR...: runs ONNX backend test case folders (model.onnx plus
// test_data_set_*/input_*.pb and output_*.pb) and compares like the ONNX suite does.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nxrt/nxrt.hpp>
#include <set>

#include "nxrt/commands.h"
#include "nxrt/node_case.h"
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
    if (a == "--verbose" || a == "-v")
      c.verbose = true;
    else if (a == "--expect")
      c.expect_file = TakeValue(args, i, a);
    else if (a == "--write-passing")
      c.write_passing = TakeValue(args, i, a);
    else if (a == "--threads")
      c.threads = ParseInt(TakeValue(args, i, a), a, 1, 1024);
    else if (!a.empty() && a[0] == '-')
      throw UsageError("unknown option '" + a + "'");
    else
      c.dirs.push_back(a);
  }
  if (c.dirs.empty())
    throw UsageError("usage: nxrt conformance DIR... [--verbose] [--expect FILE]");
  return c;
}

struct CaseResult {
  enum Status { kPassed, kFailed, kSkipped } status = kPassed;
  std::string reason;
  std::set<std::string> ops;
};

CaseResult RunCase(Env& env, const fs::path& dir, const ConformanceArgs& args) {
  CaseResult result;
  NodeCase c;
  try {
    c = ReadNodeCase(dir);
  } catch (const Exception& e) {
    // A folder without data sets has nothing to compare: skipped, not failed.
    result.status = e.code() == NX_NOT_FOUND ? CaseResult::kSkipped : CaseResult::kFailed;
    result.reason = e.what();
    return result;
  }
  result.ops = c.ops;
  try {
    SessionOptions options;
    options.SetIntraOpThreads(args.threads);
    options.SetLogLevel(NX_LOG_ERROR);
    Session session(env, (dir / "model.onnx").string(), &options);
    for (const NodeDataSet& ds : c.data_sets) {
      std::vector<Value> actual = session.Run(ds.input_names, ds.input_pointers(), ds.output_names);
      for (size_t i = 0; i < ds.expected.size(); ++i) {
        std::string why;
        if (!Matches(actual[i].get(), ds.expected[i].get(), args.rtol, args.atol, &why)) {
          result.status = CaseResult::kFailed;
          result.reason = ds.name + " output '" + ds.output_names[i] + "': " + why;
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
  std::vector<fs::path> cases = FindNodeCases(args.dirs);
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
      (r.status == CaseResult::kPassed   ? s.passed
       : r.status == CaseResult::kFailed ? s.failed
                                         : s.skipped)++;
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
  for (const auto& [op, s] : per_op)
    std::printf("%-32s %7d %7d %7d\n", op.c_str(), s.passed, s.failed, s.skipped);
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
        std::printf("MISSING %s: listed in %s but not found\n", n.c_str(),
                    args.expect_file.c_str());
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
  if (status)
    std::fprintf(stderr, "nxrt conformance: error: tests listed in %s failed\n",
                 args.expect_file.c_str());
  return status;
}

}  // namespace nxrt::cli
