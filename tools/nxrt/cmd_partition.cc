// nxrt partition MODEL [--ep NAME[:k=v,...] ... | --policy NAME] [--fallback MODE]
//                      [--ep-library PATH ...] [--virtual TYPE[:k=v,...] ...] [--json]
//                      [--dot FILE] [--html FILE]
// Where each node of a model would run with the given EPs, without creating kernels (a dry
// run): the assigned subgraphs (EP, kind, hardware device, nodes) as a table or JSON, and every
// node the preferred EP did not take, with the reason; --dot/--html also draw it (see
// partition_view.h).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nxrt/nxrt.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nxrt/commands.h"
#include "nxrt/ep_args.h"
#include "nxrt/partition_view.h"

namespace nxrt::cli {
namespace {

struct PartitionArgs {
  std::string model;
  std::vector<std::string> ep_libraries;
  std::vector<VirtualDeviceRequest> virtual_devices;
  std::vector<EpSpec> eps;
  std::optional<NxEpSelectionPolicy> policy;
  std::optional<NxFallbackMode> fallback;
  bool json = false;
  std::string dot, html;  // files to write ("" = none)
};

PartitionArgs ParsePartitionArgs(const std::vector<std::string>& args) {
  PartitionArgs p;
  auto value = [&](size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw UsageError(args[i] + " needs a value");
    return args[++i];
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json")
      p.json = true;
    else if (a == "--dot")
      p.dot = value(i);
    else if (a == "--html")
      p.html = value(i);
    else if (a == "--ep-library")
      p.ep_libraries.push_back(value(i));
    else if (a == "--ep")
      p.eps.push_back(ParseEpSpec(value(i)));
    else if (a == "--virtual")
      p.virtual_devices.push_back(ParseVirtualSpec(value(i)));
    else if (a == "--policy")
      p.policy = ParsePolicyName(value(i));
    else if (a == "--fallback")
      p.fallback = ParseFallbackName(value(i));
    else if (!a.empty() && a[0] == '-')
      throw UsageError("unknown option '" + a + "'");
    else if (p.model.empty())
      p.model = a;
    else
      throw UsageError("unexpected argument '" + a + "'");
  }
  if (p.model.empty()) throw UsageError("missing MODEL (nxrt partition MODEL [options])");
  if (p.policy && !p.eps.empty()) throw UsageError("--ep and --policy exclude each other");
  if (!p.virtual_devices.empty() && p.ep_libraries.empty())
    throw UsageError("--virtual asks EP libraries for devices: give them with --ep-library");
  return p;
}

void PrintTable(const std::string& model, const AssignmentReport& r) {
  std::printf("model: %s\n", model.c_str());
  size_t ep_width = 2, graph_width = 5, kind_width = 4, device_width = 6;
  for (const AssignedSubgraph& sg : r.subgraphs) {
    ep_width = std::max(ep_width, sg.ep_name.size());
    graph_width = std::max(graph_width, sg.graph.empty() ? 4 : sg.graph.size());
    kind_width = std::max(kind_width, sg.kind.size());
    device_width = std::max(device_width, DeviceText(sg).size());
  }
  std::printf("%-3s  %-*s  %-*s  %-*s  %-*s  %5s  %s\n", "#", static_cast<int>(graph_width),
              "graph", static_cast<int>(ep_width), "ep", static_cast<int>(kind_width), "kind",
              static_cast<int>(device_width), "device", "nodes", "ops");
  for (size_t i = 0; i < r.subgraphs.size(); ++i) {
    const AssignedSubgraph& sg = r.subgraphs[i];
    std::printf("%-3zu  %-*s  %-*s  %-*s  %-*s  %5zu  %s\n", i, static_cast<int>(graph_width),
                sg.graph.empty() ? "main" : sg.graph.c_str(), static_cast<int>(ep_width),
                sg.ep_name.c_str(), static_cast<int>(kind_width), sg.kind.c_str(),
                static_cast<int>(device_width), DeviceText(sg).c_str(), sg.nodes.size(),
                OpCounts(sg.nodes).c_str());
  }
  // Per EP: nodes and subgraphs.
  std::map<std::string, std::pair<size_t, size_t>> per_ep;
  std::vector<std::string> order;
  for (const AssignedSubgraph& sg : r.subgraphs) {
    if (!per_ep.count(sg.ep_name)) order.push_back(sg.ep_name);
    per_ep[sg.ep_name].first += sg.nodes.size();
    per_ep[sg.ep_name].second += 1;
  }
  std::string summary;
  for (const std::string& ep : order) {
    summary += (summary.empty() ? "" : ", ") + ep + " " + std::to_string(per_ep[ep].first) +
               " nodes in " + std::to_string(per_ep[ep].second) + " subgraph" +
               (per_ep[ep].second == 1 ? "" : "s");
  }
  std::printf("summary: %s\n", summary.empty() ? "no node placed" : summary.c_str());
  // Subgraphs whose kernels an EP queues on a stream (ABI 13); nothing when all run synchronously.
  for (size_t i = 0; i < r.subgraphs.size(); ++i)
    if (!r.subgraphs[i].stream.empty())
      std::printf("stream: subgraph %zu on %s\n", i, r.subgraphs[i].stream.c_str());
  if (r.fallbacks.empty()) {
    std::printf("fallbacks: none\n");
    return;
  }
  std::printf("fallbacks: %zu\n", r.fallbacks.size());
  for (const NodeFallback& f : r.fallbacks) {
    const std::string where = f.graph.empty() ? "" : f.graph + ": ";
    std::printf("  %s%s '%s' -> %s: %s (%s)\n", where.c_str(), f.node.op_type.c_str(),
                f.node.name.c_str(), f.assigned_ep.empty() ? "no EP" : f.assigned_ep.c_str(),
                f.reason_name.c_str(), f.detail.c_str());
  }
}

std::string JsonStrings(const std::vector<std::string>& list) {
  std::string out = "[";
  for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + JsonString(list[i]);
  return out + "]";
}

// A node; with its edges (input and output value names) for subgraph nodes.
std::string JsonNode(const AssignedNode& n, bool edges = false) {
  return "{\"name\": " + JsonString(n.name) + ", \"domain\": " + JsonString(n.domain) +
         ", \"op_type\": " + JsonString(n.op_type) +
         (edges ? ", \"inputs\": " + JsonStrings(n.inputs) +
                      ", \"outputs\": " + JsonStrings(n.outputs)
                : std::string()) +
         "}";
}

void PrintJson(const std::string& model, const AssignmentReport& r) {
  std::string out = "{\"model\": " + JsonString(model) + ",\n \"subgraphs\": [";
  for (size_t i = 0; i < r.subgraphs.size(); ++i) {
    const AssignedSubgraph& sg = r.subgraphs[i];
    out += std::string(i ? "," : "") + "\n  {\"graph\": " + JsonString(sg.graph) +
           ", \"ep_name\": " + JsonString(sg.ep_name) + ", \"kind\": " + JsonString(sg.kind) +
           ", \"hardware_devices\": [";
    for (size_t d = 0; d < sg.devices.size(); ++d)
      out += (d ? ", " : "") + JsonHardware(sg.devices[d]);
    out += "], \"nodes\": [";
    for (size_t n = 0; n < sg.nodes.size(); ++n)
      out += (n ? ", " : "") + JsonNode(sg.nodes[n], true);
    out += "], \"stream\": " + JsonString(sg.stream) + "}";
  }
  out += "\n ],\n \"fallbacks\": [";
  for (size_t i = 0; i < r.fallbacks.size(); ++i) {
    const NodeFallback& f = r.fallbacks[i];
    out += std::string(i ? "," : "") + "\n  {\"graph\": " + JsonString(f.graph) +
           ", \"node\": " + JsonNode(f.node) + ", \"preferred_ep\": " + JsonString(f.preferred_ep) +
           ", \"reason\": " + JsonString(f.reason_name) + ", \"detail\": " + JsonString(f.detail) +
           ", \"assigned_ep\": " + JsonString(f.assigned_ep) + "}";
  }
  out += "\n ],\n \"copies\": [";
  for (size_t i = 0; i < r.copies.size(); ++i) {
    const ReportCopy& c = r.copies[i];
    out += std::string(i ? "," : "") + "\n  {\"graph\": " + JsonString(c.graph) +
           ", \"value\": " + JsonString(c.value) + ", \"from_ep\": " + JsonString(c.from_ep) +
           ", \"to_ep\": " + JsonString(c.to_ep) +
           ", \"from_memory\": " + JsonString(c.from_memory) +
           ", \"to_memory\": " + JsonString(c.to_memory) + "}";
  }
  out += "\n ]}\n";
  std::fputs(out.c_str(), stdout);
}

}  // namespace

int PartitionCommand(const std::vector<std::string>& args) {
  PartitionArgs p = ParsePartitionArgs(args);
  Env env(NX_LOG_ERROR);
  RegisterLibraries(env, p.ep_libraries, p.virtual_devices);
  SessionOptions options;
  for (const EpSpec& ep : p.eps) options.AppendEp(ep.name, ep.options);
  if (p.policy) options.SetEpSelectionPolicy(*p.policy);
  if (p.fallback) options.SetFallback(*p.fallback);
  const AssignmentReport report = PlanPlacement(env, p.model, &options);
  auto write = [](const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw std::runtime_error("cannot write '" + path + "'");
  };
  if (!p.dot.empty()) write(p.dot, PartitionDot(p.model, report));
  if (!p.html.empty()) write(p.html, PartitionHtml(p.model, report));
  if (p.json)
    PrintJson(p.model, report);
  else
    PrintTable(p.model, report);
  return 0;
}

}  // namespace nxrt::cli
