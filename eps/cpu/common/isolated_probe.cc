#include "common/isolated_probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace nxrt::cpu {

std::string RunIsolatedProbe(const std::function<bool()>& probe) {
  const pid_t pid = fork();
  if (pid == 0) _exit(probe() ? 0 : 1);
  if (pid > 0) {
    int status = 0;
    pid_t done = -1;
    do {
      done = waitpid(pid, &status, 0);
    } while (done < 0 && errno == EINTR);
    if (done == pid && WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? "" : "failed";
    if (done == pid && WIFSIGNALED(status)) {
      return "died with signal " + std::to_string(WTERMSIG(status));
    }
  }
  return probe() ? "" : "failed";
}

}  // namespace nxrt::cpu
