#include "nxrt/certify_report.h"

#include "nxrt/ep_args.h"

namespace nxrt::cli {

const std::vector<std::string>& CertifyReport::Areas() {
  static const std::vector<std::string> areas = {"abi",          "ops",     "copies",
                                                 "control-flow", "prepack", "threads",
                                                 "streams",      "compile", "release"};
  return areas;
}

void CertifyReport::Add(const std::string& area, const std::string& name, CheckStatus status,
                        const std::string& detail) {
  std::string flat = detail;
  for (char& c : flat)
    if (c == '\n' || c == '\r') c = ' ';
  checks.push_back({area, name, status, flat});
}

AreaCounts CertifyReport::Count(const std::string& area) const {
  AreaCounts c;
  for (const CheckResult& r : checks) {
    if (!area.empty() && r.area != area) continue;
    (r.status == CheckStatus::kPassed   ? c.passed
     : r.status == CheckStatus::kFailed ? c.failed
                                        : c.skipped)++;
  }
  return c;
}

const char* StatusName(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPassed:
      return "passed";
    case CheckStatus::kFailed:
      return "failed";
    default:
      return "skipped";
  }
}

void PrintReport(const CertifyReport& r, bool verbose, std::FILE* out) {
  for (const CheckResult& c : r.checks) {
    if (!verbose && c.status == CheckStatus::kPassed) continue;
    const char* tag = c.status == CheckStatus::kPassed   ? "PASS"
                      : c.status == CheckStatus::kFailed ? "FAIL"
                                                         : "SKIP";
    std::fprintf(out, "%s [%s] %s%s%s\n", tag, c.area.c_str(), c.name.c_str(),
                 c.detail.empty() ? "" : ": ", c.detail.c_str());
  }
  std::fprintf(out, "\n%-14s %7s %7s %7s  %s\n", "area", "passed", "failed", "skipped", "result");
  for (const std::string& area : CertifyReport::Areas()) {
    const AreaCounts c = r.Count(area);
    const char* verdict = c.failed ? "FAIL" : c.passed ? "pass" : c.skipped > 0 ? "skipped" : "-";
    std::fprintf(out, "%-14s %7d %7d %7d  %s\n", area.c_str(), c.passed, c.failed, c.skipped,
                 verdict);
  }
  const AreaCounts all = r.Count("");
  std::fprintf(out, "\n%d passed, %d failed, %d skipped\n", all.passed, all.failed, all.skipped);
}

std::string ReportJson(const CertifyReport& r) {
  const AreaCounts all = r.Count("");
  std::string s = "{\n";
  s += "  \"library\": " + JsonString(r.library) + ",\n";
  s += "  \"ep\": " + JsonString(r.ep) + ",\n";
  s += "  \"vendor\": " + JsonString(r.vendor) + ",\n";
  s += "  \"ep_version\": " + JsonString(r.ep_version) + ",\n";
  s += "  \"abi_version\": " + std::to_string(r.abi_version) + ",\n";
  s += "  \"host_version\": " + JsonString(r.host_version) + ",\n";
  s += "  \"passed\": " + std::to_string(all.passed) + ",\n";
  s += "  \"failed\": " + std::to_string(all.failed) + ",\n";
  s += "  \"skipped\": " + std::to_string(all.skipped) + ",\n";
  s += "  \"areas\": [";
  bool first = true;
  for (const std::string& area : CertifyReport::Areas()) {
    const AreaCounts c = r.Count(area);
    s += std::string(first ? "\n" : ",\n") + "    {\"area\": " + JsonString(area) +
         ", \"passed\": " + std::to_string(c.passed) + ", \"failed\": " + std::to_string(c.failed) +
         ", \"skipped\": " + std::to_string(c.skipped) + "}";
    first = false;
  }
  s += "\n  ],\n  \"checks\": [";
  first = true;
  for (const CheckResult& c : r.checks) {
    s += std::string(first ? "\n" : ",\n") + "    {\"area\": " + JsonString(c.area) +
         ", \"name\": " + JsonString(c.name) + ", \"status\": " + JsonString(StatusName(c.status)) +
         ", \"detail\": " + JsonString(c.detail) + "}";
    first = false;
  }
  s += "\n  ]\n}\n";
  return s;
}

std::string ReportHtml(const CertifyReport& r) {
  const AreaCounts all = r.Count("");
  std::string s =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>nxrt certify: " +
      HtmlEscape(r.ep) +
      "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
      "margin-bottom:2em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
      ".passed{color:#176f2c}.failed{color:#b00020;font-weight:bold}.skipped{color:#777}"
      "</style></head><body>\n";
  s += "<h1>nxrt certify: " + HtmlEscape(r.ep) + "</h1>\n<p>Library <code>" +
       HtmlEscape(r.library) + "</code>, vendor " + HtmlEscape(r.vendor) + ", EP version " +
       HtmlEscape(r.ep_version) + ", plugin ABI version " + std::to_string(r.abi_version) +
       ", host " + HtmlEscape(r.host_version) + ".</p>\n";
  s += "<p class=\"" + std::string(all.failed ? "failed" : "passed") + "\">" +
       std::to_string(all.passed) + " passed, " + std::to_string(all.failed) + " failed, " +
       std::to_string(all.skipped) + " skipped</p>\n";
  s += "<table><tr><th>area</th><th>passed</th><th>failed</th><th>skipped</th></tr>\n";
  for (const std::string& area : CertifyReport::Areas()) {
    const AreaCounts c = r.Count(area);
    s += "<tr><td><a href=\"#" + area + "\">" + area + "</a></td><td>" + std::to_string(c.passed) +
         "</td><td" + (c.failed ? " class=\"failed\"" : "") + ">" + std::to_string(c.failed) +
         "</td><td>" + std::to_string(c.skipped) + "</td></tr>\n";
  }
  s += "</table>\n";
  for (const std::string& area : CertifyReport::Areas()) {
    s += "<h2 id=\"" + area + "\">" + area +
         "</h2>\n<table><tr><th>check</th><th>result</th>"
         "<th>detail</th></tr>\n";
    for (const CheckResult& c : r.checks) {
      if (c.area != area) continue;
      s += "<tr><td>" + HtmlEscape(c.name) + "</td><td class=\"" + StatusName(c.status) + "\">" +
           StatusName(c.status) + "</td><td>" + HtmlEscape(c.detail) + "</td></tr>\n";
    }
    s += "</table>\n";
  }
  s += "</body></html>\n";
  return s;
}

}  // namespace nxrt::cli
