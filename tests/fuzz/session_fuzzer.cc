// libFuzzer target: an ONNX model (serialized ModelProto) -> session creation -> one run.
//
// Errors are the expected outcome for most inputs: nxrt must reject a malformed model or a failing
// kernel with a status. Crashes, sanitizer reports, leaks and timeouts are bugs. See
// docs/fuzzing.md for building, running and the corpora.
#include <cstdlib>

#include "session_harness.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Sanitizer builds run OpenMP single-threaded (LeakSanitizer cannot stop OpenMP workers in
  // ptrace-restricted sandboxes); respect a value the user set.
  setenv("OMP_NUM_THREADS", "1", 0);
  nxrt_fuzz::ProcessEnv();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nxrt_fuzz::CreateAndRun(nxrt_fuzz::ProcessEnv(), data, size);
  return 0;
}
