// nxrt serve MODEL... [flags]: the model server lives in the Python package (python/nxrt/serve),
// so this only hands over to `python3 -m nxrt.serve` with the same arguments. execvp replaces
// this process: Ctrl-C and SIGTERM reach the server itself and its exit status is ours.
// NXRT_PYTHON names another interpreter (a virtualenv's python, as tools/test.sh uses).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nxrt/commands.h"

namespace nxrt::cli {
namespace {

constexpr const char* kInstallHint =
    "nxrt serve needs the nxrt Python package with its serving dependencies: "
    "pip install nxrt fastapi uvicorn grpcio grpcio-tools prometheus-client "
    "(tools/scripts/requirements.txt pins them), or set NXRT_PYTHON to a Python that has them";

std::string PythonInterpreter() {
  const char* chosen = std::getenv("NXRT_PYTHON");
  return chosen != nullptr && *chosen != '\0' ? chosen : "python3";
}

// Runs `PYTHON -c "import nxrt.serve.server, uvicorn"`: a missing package is found before the
// server starts, so the user gets the install hint instead of a Python traceback.
bool ServeImportable(const std::string& python) {
  std::string command = "'" + python + "' -c 'import nxrt.serve.server, uvicorn' >/dev/null 2>&1";
  if (python.find('\'') != std::string::npos) return true;  // cannot quote it: let exec tell
  return std::system(command.c_str()) == 0;
}

}  // namespace

int ServeCommand(const std::vector<std::string>& args) {
  std::string python = PythonInterpreter();
  if (!ServeImportable(python)) {
    std::fprintf(stderr, "nxrt serve: %s (tried %s)\n", kInstallHint, python.c_str());
    return 2;
  }
  std::vector<std::string> words = {python, "-m", "nxrt.serve"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);  // what we printed must not be lost when the process image is replaced
  execvp(argv[0], argv.data());
  // Only reached when the exec failed.
  std::fprintf(stderr, "nxrt serve: cannot run %s: %s; %s\n", python.c_str(), std::strerror(errno),
               kInstallHint);
  return 127;
}

}  // namespace nxrt::cli
