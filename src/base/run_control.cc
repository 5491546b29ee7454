#include "base/run_control.h"

#include <cstdio>

#include "base/error.h"

namespace nxrt {

thread_local const RunControl* RunControl::current_ = nullptr;

namespace {

std::string Megabytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

void MemoryBudget::Charge(size_t bytes) {
  size_t used = in_use_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || used > limit_ - bytes) {
      Throw(NX_OUT_OF_MEMORY, "the session's memory limit of " + Megabytes(limit_) +
                                  " is reached: " + Megabytes(used) + " in use, " +
                                  Megabytes(bytes) + " more asked for");
    }
  } while (!in_use_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
}

bool RunControl::ShouldStop() const {
  if (terminate != nullptr && terminate->load(std::memory_order_relaxed)) return true;
  return has_deadline && std::chrono::steady_clock::now() >= deadline;
}

void RunControl::ThrowIfStopped(const std::string& where) const {
  const std::string at = where.empty() ? std::string() : " (" + where + ")";
  if (terminate != nullptr && terminate->load(std::memory_order_relaxed)) {
    Throw(NX_CANCELLED, "the run was terminated: its run options' terminate flag is set" + at);
  }
  if (has_deadline && std::chrono::steady_clock::now() >= deadline) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", timeout_seconds);
    Throw(NX_CANCELLED, std::string("the run's time limit of ") + limit + " s was reached" + at);
  }
}

}  // namespace nxrt
