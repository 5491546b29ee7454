// oneDNN generates its sgemm kernels on the first sizeable call in a process: about 30 ms on
// Zen 1, more than onnxruntime's whole creation of a small model. A kernel that will call sgemm
// (a MatMul or Gemm whose static shapes make it more than a matrix-vector product, Einsum,
// ConvTranspose) starts that generation on a thread of its own when it is created, so it
// overlaps the rest of session creation; a first run that reaches sgemm before it is done waits
// inside oneDNN for the rest, and one that reaches it unannounced (a product of symbolic size)
// generates the kernels then.
// Sessions whose kernels never call sgemm never generate it (it used to start when the library
// loaded and then held a core through the first runs of every model, docs/threading.md).
#pragma once

namespace nxrt::cpu::linalg {

// Starts the generation once per process (later calls return at once). Counted as background
// work (common/background_work.h) until it ends.
void StartSgemmWarmUp();

// Waits for the generation if it was started; the library calls it before it is released.
void JoinSgemmWarmUp() noexcept;

}  // namespace nxrt::cpu::linalg
