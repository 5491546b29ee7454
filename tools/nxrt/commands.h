// The `nxrt` subcommands. Each returns the process exit status; errors are thrown as
// nxrt::Exception (or UsageError) and reported by main as one line on stderr.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace nxrt::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int RunCommand(const std::vector<std::string>& args);          // nxrt run
int InfoCommand(const std::vector<std::string>& args);         // nxrt info
int ConformanceCommand(const std::vector<std::string>& args);  // nxrt conformance
int DevicesCommand(const std::vector<std::string>& args);      // nxrt devices
int PartitionCommand(const std::vector<std::string>& args);    // nxrt partition
int CompileCommand(const std::vector<std::string>& args);      // nxrt compile
int CertifyCommand(const std::vector<std::string>& args);      // nxrt certify
int ServeCommand(const std::vector<std::string>& args);        // nxrt serve (python -m nxrt.serve)

// "x" -> its value for `--flag x` / `--flag=x` style parsing; throws UsageError if missing.
std::string TakeValue(const std::vector<std::string>& args, size_t& i, const std::string& flag);
int ParseInt(const std::string& text, const std::string& flag, int min, int max);

}  // namespace nxrt::cli
