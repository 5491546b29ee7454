// What bounds one run: a terminate flag another thread may set, a time limit, and the session's
// memory budget. The session makes the run's control current on the running thread for the
// whole run (control-flow bodies run on the same thread, so they inherit it); the executor
// checks it between steps, control-flow kernels once per iteration, and kernels through the
// plugin ABI (KernelContext_ShouldStop). Buffer pools charge the current budget.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace nxrt {

// Bytes of tensor memory a session's runs hold at once, against a limit. Shared by the
// session's concurrent runs; every charged buffer keeps the budget alive until it is freed.
class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit) : limit_(limit) {}
  // Charges `bytes`, or throws NX_OUT_OF_MEMORY naming the limit when they do not fit.
  void Charge(size_t bytes);
  void Release(size_t bytes) { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }
  size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }

 private:
  size_t limit_;
  std::atomic<size_t> in_use_{0};
};

// The stop conditions of one run. The flag belongs to the caller's run options and must
// outlive the run.
struct RunControl {
  const std::atomic<bool>* terminate = nullptr;
  bool has_deadline = false;
  std::chrono::steady_clock::time_point deadline;
  double timeout_seconds = 0;
  std::shared_ptr<MemoryBudget> budget;  // null: no limit

  // Whether the run must stop now (cheap: one atomic load, one clock read with a deadline).
  bool ShouldStop() const;
  // Throws NX_CANCELLED saying why, with `where` ("before Conv node 'c1'") appended.
  void ThrowIfStopped(const std::string& where) const;

  // The control of the run on this thread, or null outside runs.
  static const RunControl* Current() { return current_; }

 private:
  friend class RunControlScope;
  static thread_local const RunControl* current_;
};

// Makes `control` current on this thread for the scope (restores the previous one after).
class RunControlScope {
 public:
  explicit RunControlScope(const RunControl* control) : previous_(RunControl::current_) {
    RunControl::current_ = control;
  }
  ~RunControlScope() { RunControl::current_ = previous_; }
  RunControlScope(const RunControlScope&) = delete;
  RunControlScope& operator=(const RunControlScope&) = delete;

 private:
  const RunControl* previous_;
};

// The current run's memory budget (null when there is none): what buffer pools charge.
inline const std::shared_ptr<MemoryBudget>* CurrentMemoryBudget() {
  const RunControl* c = RunControl::Current();
  return c != nullptr && c->budget ? &c->budget : nullptr;
}

// Throws NX_CANCELLED when the current run (if any) must stop. For loops the runtime drives
// (Loop/Scan iterations).
inline void ThrowIfRunStopped(const std::string& where) {
  const RunControl* c = RunControl::Current();
  if (c != nullptr && c->ShouldStop()) c->ThrowIfStopped(where);
}

}  // namespace nxrt
