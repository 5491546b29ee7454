// nxrt certify --ep-library PATH [--ep NAME[:k=v,...]] [--virtual TYPE[:k=v,...] ...]
//               [--node-tests DIR ...] [--threads N] [--runs N] [--report FILE.json|.html]
//               [--verbose]
// The conformance kit for an EP library: runs the areas of certify_context.h against it, prints
// the failed and skipped checks, a table per area and "N passed, N failed, N skipped" last, and
// exits 1 when any check failed.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nxrt/certify_context.h"
#include "nxrt/commands.h"

namespace nxrt::cli {
namespace {

namespace fs = std::filesystem;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

certify::Options ParseArgs(const std::vector<std::string>& args) {
  certify::Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--ep-library") {
      if (!o.library.empty()) throw UsageError("certify takes one --ep-library");
      o.library = TakeValue(args, i, a);
    } else if (a == "--ep") {
      o.ep = ParseEpSpec(TakeValue(args, i, a));
    } else if (a == "--virtual") {
      o.virtual_devices.push_back(ParseVirtualSpec(TakeValue(args, i, a)));
    } else if (a == "--node-tests") {
      o.node_test_dirs.push_back(TakeValue(args, i, a));
    } else if (a == "--threads") {
      o.threads = ParseInt(TakeValue(args, i, a), a, 1, 256);
    } else if (a == "--runs") {
      o.runs = ParseInt(TakeValue(args, i, a), a, 1, 100000);
    } else if (a == "--report") {
      o.report_file = TakeValue(args, i, a);
      if (!EndsWith(o.report_file, ".json") && !EndsWith(o.report_file, ".html") &&
          !EndsWith(o.report_file, ".htm"))
        throw UsageError("--report writes FILE.json or FILE.html, got '" + o.report_file + "'");
    } else if (a == "--verbose" || a == "-v") {
      o.verbose = true;
    } else {
      throw UsageError("unknown option '" + a + "'");
    }
  }
  if (o.library.empty())
    throw UsageError("missing --ep-library PATH (nxrt certify --ep-library PATH [options])");
  return o;
}

// A scratch folder for compiled models, removed when certification ends.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string pattern = (base / "nxrt-certify-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw Exception(NX_FAIL, "cannot create a scratch folder under " + base.string());
    path = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

int CertifyCommand(const std::vector<std::string>& args) {
  ScratchDir scratch;
  certify::Context ctx;
  ctx.options = ParseArgs(args);
  ctx.options.work_dir = scratch.path;
  ctx.report.library = ctx.options.library;

  struct Area {
    const char* name;
    void (*run)(certify::Context&);
  };
  const Area areas[] = {
      {"abi", certify::CheckAbi},         {"ops", certify::CheckOps},
      {"copies", certify::CheckCopies},   {"control-flow", certify::CheckControlFlow},
      {"prepack", certify::CheckPrepack}, {"threads", certify::CheckThreads},
      {"streams", certify::CheckStreams}, {"compile", certify::CheckCompile},
      {"release", certify::CheckRelease}};
  std::printf("nxrt certify: %s\n", ctx.options.library.c_str());
  for (const Area& area : areas) {
    std::printf("checking %s ...\n", area.name);
    std::fflush(stdout);
    area.run(ctx);
    if (std::string(area.name) == "abi" && ctx.loaded)
      std::printf("EP '%s': vendor '%s', version '%s', plugin ABI version %lld (host nxrt %s)\n",
                  ctx.report.ep.c_str(), ctx.report.vendor.c_str(), ctx.report.ep_version.c_str(),
                  static_cast<long long>(ctx.report.abi_version), ctx.report.host_version.c_str());
  }
  ctx.env.reset();
  std::printf("\n");
  PrintReport(ctx.report, ctx.options.verbose, stdout);
  if (!ctx.options.report_file.empty()) {
    std::ofstream out(ctx.options.report_file, std::ios::binary);
    out << (EndsWith(ctx.options.report_file, ".json") ? ReportJson(ctx.report)
                                                       : ReportHtml(ctx.report));
    if (!out) throw Exception(NX_FAIL, "cannot write " + ctx.options.report_file);
  }
  return ctx.report.Count("").failed > 0 ? 1 : 0;
}

}  // namespace nxrt::cli
