// The "ops" area of `nxrt certify`: every ONNX node test whose nodes the EP claims (all or some,
// by a dry-run placement) runs with those nodes on the EP (fallback forbidden when it claims
// them all) and is compared with the outputs the test expects. Where the EP misses, the CPU EP
// runs the case too: a case the CPU EP fails as well is a runtime gap, reported as skipped.
#include <unistd.h>

#include <climits>

#include "nxrt/certify_context.h"
#include "nxrt/node_case.h"

namespace nxrt::cli::certify {
namespace {

namespace fs = std::filesystem;
constexpr const char* kArea = "ops";

// The node-test folders to use when none is given: the build tree's copy of the onnx wheel's
// cases (tools/scripts/dump_onnx_node_tests.py), else Debian's libonnx-testdata.
std::vector<std::string> DefaultNodeTestDirs() {
  std::vector<fs::path> candidates;
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = '\0';
    candidates.push_back(fs::path(exe).parent_path().parent_path() / "testdata" / "onnx-node");
  }
  candidates.push_back("/usr/share/libonnx-testdata/data/node");
  std::error_code ec;
  for (const fs::path& p : candidates)
    if (fs::is_directory(p, ec)) return {p.string()};
  return {};
}

// Runs every data set of `c` in a session made with `options`; "" when all outputs match.
std::string RunAgainstExpected(Env& env, const NodeCase& c, const SessionOptions& options) {
  try {
    Session session(env, (c.dir / "model.onnx").string(), &options);
    for (const NodeDataSet& ds : c.data_sets) {
      std::vector<Value> actual = session.Run(ds.input_names, ds.input_pointers(), ds.output_names);
      std::string why;
      if (!SameOutputs(actual, ds.expected, ds.output_names, kExpectedRtol, kExpectedAtol, &why))
        return ds.name + " " + why;
    }
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string OpList(const NodeCase& c) {
  std::string s;
  for (const std::string& op : c.ops) s += (s.empty() ? "" : " ") + op;
  return s;
}

}  // namespace

void CheckOps(Context& ctx) {
  if (!ctx.loaded) return;
  std::vector<std::string> dirs = ctx.options.node_test_dirs;
  if (dirs.empty()) dirs = DefaultNodeTestDirs();
  if (dirs.empty()) {
    ctx.Add(kArea, "ONNX node tests", CheckStatus::kSkipped,
            "no node-test folder found: give one with --node-tests DIR");
    return;
  }
  std::vector<fs::path> cases;
  try {
    cases = FindNodeCases(dirs);
  } catch (const std::exception& e) {
    ctx.Add(kArea, "ONNX node tests", CheckStatus::kFailed, e.what());
    return;
  }
  size_t claimed = 0;
  for (const fs::path& dir : cases) {
    NodeCase c;
    try {
      c = ReadNodeCase(dir);
    } catch (const std::exception&) {
      continue;  // nothing to run (no data set) or not a model: not about the EP
    }
    AssignmentReport plan;
    try {
      SessionOptions plan_options = ctx.EpSession();
      plan = PlanPlacement(*ctx.env, (dir / "model.onnx").string(), &plan_options);
    } catch (const std::exception&) {
      continue;  // the runtime cannot place the model at all (an op no EP has): not claimed
    }
    const size_t on_ep = ctx.NodesOnEp(plan), total = Context::NodesInAll(plan);
    if (on_ep == 0) continue;
    ++claimed;
    const bool whole = on_ep == total;
    const std::string placed = std::to_string(on_ep) + "/" + std::to_string(total) +
                               " nodes on the EP (" + OpList(c) + ")";
    const std::string ep_why = RunAgainstExpected(
        *ctx.env, c, ctx.EpSession(whole ? NX_FALLBACK_FORBID : NX_FALLBACK_ALLOW));
    const std::string name = dir.filename().string();
    if (ep_why.empty()) {
      ctx.Add(kArea, name, CheckStatus::kPassed, placed);
      if (whole) ctx.passed_cases.push_back(dir);
      continue;
    }
    const std::string cpu_why = RunAgainstExpected(*ctx.env, c, Context::CpuSession());
    if (cpu_why.empty())
      ctx.Add(kArea, name, CheckStatus::kFailed, ep_why + "; " + placed + "; the CPU EP passes");
    else
      ctx.Add(kArea, name, CheckStatus::kSkipped,
              "the CPU EP fails this case too (" + cpu_why + "); on the EP: " + ep_why);
  }
  if (claimed == 0)
    ctx.Add(kArea, "ONNX node tests", CheckStatus::kSkipped,
            "the EP claims no node of the " + std::to_string(cases.size()) + " cases");
}

}  // namespace nxrt::cli::certify
