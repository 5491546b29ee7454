/* LD_PRELOAD library for runs on another machine without a debugger: on SIGSEGV, SIGILL,
 * SIGBUS or SIGFPE it prints the signal, its si_code (128 = a general-protection fault), the
 * faulting address and the instruction pointer and backtrace as module + offset, which
 * `addr2line -f -C -e MODULE OFFSET` resolves here against the unstripped build. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <ucontext.h>
#include <unistd.h>

static void print_location(const char* what, void* p) {
  Dl_info d = {0};
  if (dladdr(p, &d) && d.dli_fname) {
    fprintf(stderr, "  %s %p = %s+0x%lx (%s)\n", what, p, d.dli_fname,
            (unsigned long)((char*)p - (char*)d.dli_fbase), d.dli_sname ? d.dli_sname : "?");
  } else {
    fprintf(stderr, "  %s %p\n", what, p);
  }
}

static void report(int sig, siginfo_t* si, void* context) {
  const ucontext_t* u = (const ucontext_t*)context;
  fprintf(stderr, "CRASH signal %d code %d addr %p\n", sig, si->si_code, si->si_addr);
  print_location("rip", (void*)u->uc_mcontext.gregs[REG_RIP]);
  void* frames[40];
  const int n = backtrace(frames, 40);
  for (int i = 0; i < n; ++i) print_location("bt", frames[i]);
  _exit(128 + sig);
}

__attribute__((constructor)) static void install(void) {
  /* Its own stack: AMX state makes signal frames large. */
  static char stack[1 << 16];
  stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack};
  sigaltstack(&ss, 0);
  struct sigaction sa = {0};
  sa.sa_sigaction = report;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGILL, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
  sigaction(SIGFPE, &sa, 0);
}
