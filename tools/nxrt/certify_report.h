// The results of `nxrt certify`: one line per check, grouped by area, printed as a table and
// written as JSON or HTML.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace nxrt::cli {

enum class CheckStatus { kPassed, kFailed, kSkipped };

struct CheckResult {
  std::string area;  // one of CertifyReport::kAreas
  std::string name;  // what was checked, e.g. "test_add_bcast" or "float32 round trip"
  CheckStatus status = CheckStatus::kPassed;
  std::string detail;  // why it failed or was skipped; facts for passed checks
};

struct AreaCounts {
  int passed = 0, failed = 0, skipped = 0;
};

struct CertifyReport {
  // The areas in the order they run and print.
  static const std::vector<std::string>& Areas();

  std::string library;  // path given with --ep-library
  std::string ep;       // EP name
  std::string vendor, ep_version;
  int64_t abi_version = 0;  // plugin ABI version of the EP's factory (0: unknown)
  std::string host_version;
  std::vector<CheckResult> checks;

  void Add(const std::string& area, const std::string& name, CheckStatus status,
           const std::string& detail = "");
  AreaCounts Count(const std::string& area) const;  // "" = every area
};

const char* StatusName(CheckStatus s);  // "passed", "failed", "skipped"

// Failed and skipped checks (every check with `verbose`), the per-area table, and
// "N passed, N failed, N skipped" as the last line.
void PrintReport(const CertifyReport& report, bool verbose, std::FILE* out);
std::string ReportJson(const CertifyReport& report);
std::string ReportHtml(const CertifyReport& report);

}  // namespace nxrt::cli
