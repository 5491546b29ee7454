// Runs a CPU feature self-test where a fault cannot take the application down: a CPU or
// hypervisor can report a feature (AMX, say) whose first use then raises a fault, which would
// otherwise kill the process that merely created a session.
#pragma once

#include <functional>
#include <string>

namespace nxrt::cpu {

// Runs `probe` in a forked child and says how it ended: "" when it returned true, else a short
// reason ("failed", "died with signal 11"). The child only runs `probe` and exits, so `probe`
// must not need other threads or locks they might hold; allocate what it uses before the call.
// Without a child (fork refused, or the child reaped by another waitpid) `probe` runs in this
// process.
std::string RunIsolatedProbe(const std::function<bool()>& probe);

}  // namespace nxrt::cpu
