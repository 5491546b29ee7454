// nxrt: the command line of the nxrt runtime.
#include <cstdio>
#include <cstring>
#include <exception>
#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

#include "nxrt/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: nxrt <command> [options]\n"
    "\n"
    "commands:\n"
    "  run MODEL [--input NAME=FILE.npy ...] [--output-dir DIR] [--threads N] [--repeat N]\n"
    "          [--ep-library PATH ...] [--virtual TYPE[:key=value,...] ...]\n"
    "          [--ep NAME[:key=value,...] ... | --policy NAME] [--fallback allow|warn|forbid]\n"
    "          [--profile FILE] [--timeout SECONDS] [--memory-limit MB]\n"
    "      run a model (random inputs of the declared shapes where none are given); --ep-library\n"
    "      registers an EP library (asking it for --virtual devices), --ep selects EPs in\n"
    "      priority order with options, --policy selects automatically (prefer-cpu, prefer-gpu,\n"
    "      prefer-npu, max-performance, min-power); --fallback: CPU EP for unclaimed nodes;\n"
    "      --profile writes a Chrome trace JSON (session steps, runs, nodes, copies) to FILE;\n"
    "      --timeout stops the runs after SECONDS in all; --memory-limit caps the tensor memory\n"
    "      the runs hold at once\n"
    "  info MODEL [--values]\n"
    "      inputs, outputs, opsets and operator counts of a model; --values loads it (CPU EP)\n"
    "      and lists every value of the main graph with its static type (declared or inferred)\n"
    "  conformance DIR... [--verbose] [--expect FILE] [--write-passing FILE] [--threads N]\n"
    "      run ONNX backend test case folders and compare with their expected outputs\n"
    "  devices [--json] [--ep-library PATH ...] [--virtual TYPE[:key=value,...] ...]\n"
    "      the hardware devices nxrt discovers (CPU with ISA features, GPUs, NPUs) and the EP\n"
    "      devices of each EP library (the default CPU EP and those given)\n"
    "  partition MODEL [--ep NAME[:key=value,...] ... | --policy NAME] [--fallback MODE]\n"
    "          [--ep-library PATH ...] [--virtual TYPE[:key=value,...] ...] [--json]\n"
    "          [--dot FILE] [--html FILE]\n"
    "      where each node would run (a dry run: no kernels are created): the assigned\n"
    "      subgraphs with EP, kind, hardware device and nodes, and why nodes left the\n"
    "      preferred EP; --json adds each node's inputs/outputs and the copies between\n"
    "      memories; --dot writes a Graphviz graph, --html a self-contained page drawing\n"
    "      every node coloured by EP with the summary\n"
    "  compile MODEL -o OUT.onnx [--ep NAME[:key=value,...] ... | --policy NAME]\n"
    "          [--ep-library PATH ...] [--virtual TYPE[:key=value,...] ...] [--fallback MODE]\n"
    "          [--embed | --external] [--keep-original]\n"
    "      compile ahead of time for the chosen EPs (virtual devices too: the hardware need\n"
    "      not be present) and write the model with each compiled group as an EPContext node,\n"
    "      its payload embedded (default) or in a file next to OUT (--external); with\n"
    "      --keep-original a device the payload does not suit runs the original nodes; one\n"
    "      line per group\n"
    "  certify --ep-library PATH [--ep NAME[:key=value,...]] [--virtual TYPE[:key=value,...] ...]\n"
    "          [--node-tests DIR ...] [--threads N] [--runs N] [--report FILE.json|FILE.html]\n"
    "          [--verbose]\n"
    "      the conformance kit for an EP library: ABI and identity, the ONNX node tests of the\n"
    "      ops it claims (forced onto it, against the expected outputs), copies in and out of\n"
    "      its memory, If/Loop/Scan bodies on it, weight pre-packing, N threads running one\n"
    "      session at once, ahead-of-time compile round trip, release; prints failed and\n"
    "      skipped checks, a table per area and 'N passed, N failed, N skipped'; exit status 1\n"
    "      when a check fails\n"
    "  serve MODEL... [--port N] [--grpc-port N] [--max-batch N] [--ray [--replicas N]] ...\n"
    "      serve models over the KServe v2 / Triton protocol (HTTP and gRPC): runs\n"
    "      `python3 -m nxrt.serve` with the same arguments (NXRT_PYTHON names another\n"
    "      interpreter); needs the nxrt Python package; `nxrt serve --help` lists every flag\n"
    "  version\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "run") return nxrt::cli::RunCommand(args);
    if (command == "info") return nxrt::cli::InfoCommand(args);
    if (command == "conformance") return nxrt::cli::ConformanceCommand(args);
    if (command == "devices") return nxrt::cli::DevicesCommand(args);
    if (command == "partition") return nxrt::cli::PartitionCommand(args);
    if (command == "compile") return nxrt::cli::CompileCommand(args);
    if (command == "certify") return nxrt::cli::CertifyCommand(args);
    if (command == "serve") return nxrt::cli::ServeCommand(args);
    if (command == "version" || command == "--version") {
      std::printf("nxrt %s\n", Nx_GetVersionString());
      return 0;
    }
    throw nxrt::cli::UsageError("unknown command '" + command + "' (see nxrt --help)");
  } catch (const nxrt::cli::UsageError& e) {
    std::fprintf(stderr, "nxrt %s: %s\n", command.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::string message = e.what();
    for (char& c : message)
      if (c == '\n') c = ' ';  // one line on stderr
    std::fprintf(stderr, "nxrt %s: error: %s\n", command.c_str(), message.c_str());
    return 1;
  }
}

namespace nxrt::cli {

std::string TakeValue(const std::vector<std::string>& args, size_t& i, const std::string& flag) {
  if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
  return args[++i];
}

int ParseInt(const std::string& text, const std::string& flag, int min, int max) {
  try {
    size_t used = 0;
    long v = std::stol(text, &used);
    if (used != text.size() || v < min || v > max) throw std::out_of_range("range");
    return static_cast<int>(v);
  } catch (const std::exception&) {
    throw UsageError(flag + " expects an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + text + "'");
  }
}

}  // namespace nxrt::cli
