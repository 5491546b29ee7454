// The body of nxrt_session_fuzzer, shared with the regression-corpus unit test
// (tests/fuzz/regression_corpus_test.cc) so that every build replays the corpus the same way.
#pragma once

#include <nxrt/nxrt_c_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <vector>

namespace nxrt_fuzz {

// More elements than this in one input is not worth a run: the fuzzer would spend its time
// filling and copying memory instead of exploring kernels.
constexpr int64_t kMaxInputElements = int64_t{1} << 16;

// What bounds one run, as a server would bound runs of models it does not trust (the run options
// and memory limit are what the fuzzer exercises here): a Loop with a trip count of 2^62 or a
// scan output that grows without end must end in a clean error, not in libFuzzer's timeout or
// out-of-memory kill.
constexpr double kRunSeconds = 2.0;
constexpr size_t kSessionMemoryBytes = size_t{512} << 20;

// Every log line is dropped: thousands of rejected models a second would drown the fuzzer's own
// output.
inline void DropLog(void*, NxLogLevel, const char*) {}

// y = x x for x of [8, 8] (opset 17), serialized: a product for oneDNN's sgemm.
inline constexpr char kMatMulModel[] =
    "\x08\x08\x3a\x40\x0a\x11\x0a\x01\x78\x0a\x01\x78\x12\x01\x79\x22\x06\x4d\x61\x74\x4d\x75\x6c"
    "\x12\x01\x67\x5a\x13\x0a\x01\x78\x12\x0e\x0a\x0c\x08\x01\x12\x08\x0a\x02\x08\x08\x0a\x02"
    "\x08\x08\x62\x13\x0a\x01\x79\x12\x0e\x0a\x0c\x08\x01\x12\x08\x0a\x02\x08\x08\x0a\x02\x08"
    "\x08\x42\x04\x0a\x00\x10\x11";

inline NxEnv* ProcessEnv() {
  // One env for the process (the CPU EP library is loaded once, as in an application); it is
  // never released, so LeakSanitizer sees it as reachable.
  static NxEnv* env = [] {
    NxEnv* e = nullptr;
    if (NxStatus* st = NxEnv_Create(NX_LOG_ERROR, DropLog, nullptr, &e)) {
      NxStatus_Release(st);
      std::abort();  // the harness itself is broken, not the input
    }
    // Listing the EP devices loads the CPU EP library now, so that libFuzzer sees its coverage
    // counters from the start instead of a module that appears with the first session.
    size_t devices = 0;
    if (NxStatus* st = NxEnv_GetEpDeviceCount(e, &devices)) {
      std::fprintf(stderr, "nxrt_fuzz: %s\n", NxStatus_GetMessage(st));
      std::abort();
    }
    // A session with a MatMul starts a thread that generates oneDNN's sgemm kernels (tens of
    // ms, far longer under ASan; eps/cpu/kernels/linalg/sgemm_warm_up.h). Start it and let it
    // finish before the first input: libFuzzer's leak check counts every thread's allocations
    // against the input being run and stops the world mid-flight, so a live second thread
    // makes a leak verdict depend on timing (CI once saw a leak report in the regression replay
    // that 40 replays here never showed again). Releasing an env releases its CPU EP factory,
    // which joins that thread; `e` keeps the library loaded and the generation runs once per
    // process, so no input starts it again.
    NxSession* matmul = nullptr;
    if (NxStatus* st = NxSession_CreateFromBuffer(e, kMatMulModel, sizeof kMatMulModel - 1, nullptr,
                                                  &matmul)) {
      std::fprintf(stderr, "nxrt_fuzz: %s\n", NxStatus_GetMessage(st));
      std::abort();
    }
    NxSession_Release(matmul);
    NxEnv* joiner = nullptr;
    if (NxStatus* st = NxEnv_Create(NX_LOG_ERROR, DropLog, nullptr, &joiner)) {
      NxStatus_Release(st);
      std::abort();
    }
    if (NxStatus* st = NxEnv_GetEpDeviceCount(joiner, &devices)) NxStatus_Release(st);
    NxEnv_Release(joiner);
    return e;
  }();
  return env;
}

// Consumes a status: the fuzzer cares only whether a call succeeded.
// NXRT_FUZZ_VERBOSE=1 prints each error, to see how far a replayed file gets.
inline bool Ok(NxStatus* st) {
  if (st == nullptr) return true;
  static const bool verbose = std::getenv("NXRT_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "nxrt_fuzz: %s\n", NxStatus_GetMessage(st));
  NxStatus_Release(st);
  return false;
}

// Input contents are chosen by the model bytes, so a crash reproduces from the file alone, and
// a model gets zeros, ones, a small ramp or floating-point specials (NaN, inf, huge) depending on
// its bytes.
enum class Fill { kZeros, kOnes, kRamp, kSpecials };

inline Fill ChooseFill(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;  // FNV-1a over the model
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return static_cast<Fill>(h % 4);
}

inline double FillValue(Fill fill, size_t i) {
  static constexpr double kSpecials[] = {std::numeric_limits<double>::quiet_NaN(),
                                         std::numeric_limits<double>::infinity(),
                                         -std::numeric_limits<double>::infinity(),
                                         1e30,
                                         -1e30,
                                         -0.0,
                                         3.5,
                                         -2.0};
  switch (fill) {
    case Fill::kZeros:
      return 0;
    case Fill::kOnes:
      return 1;
    case Fill::kRamp:
      return static_cast<double>(i % 7) - 3;
    case Fill::kSpecials:
      return kSpecials[i % std::size(kSpecials)];
  }
  return 0;
}

// Integers get the ramp/ones pattern (specials become small values: a NaN is not an integer).
inline int64_t IntValue(Fill fill, size_t i) {
  double v = FillValue(fill, i);
  if (!std::isfinite(v) || std::fabs(v) > 100) return static_cast<int64_t>(i % 3);
  return static_cast<int64_t>(v);
}

template <typename T>
void FillInts(void* data, size_t n, Fill fill) {
  T* p = static_cast<T*>(data);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(IntValue(fill, i));
}

inline void FillTensor(NxValue* v, NxElementType type, size_t n, Fill fill) {
  void* data = NxValue_GetData(v);
  if (data == nullptr || fill == Fill::kZeros) return;  // zero-initialised already
  switch (type) {
    case NX_TYPE_FLOAT:
      for (size_t i = 0; i < n; ++i)
        static_cast<float*>(data)[i] = static_cast<float>(FillValue(fill, i));
      break;
    case NX_TYPE_DOUBLE:
      for (size_t i = 0; i < n; ++i) static_cast<double*>(data)[i] = FillValue(fill, i);
      break;
    case NX_TYPE_INT8:
      FillInts<int8_t>(data, n, fill);
      break;
    case NX_TYPE_UINT8:
      FillInts<uint8_t>(data, n, fill);
      break;
    case NX_TYPE_INT16:
      FillInts<int16_t>(data, n, fill);
      break;
    case NX_TYPE_UINT16:
      FillInts<uint16_t>(data, n, fill);
      break;
    case NX_TYPE_INT32:
      FillInts<int32_t>(data, n, fill);
      break;
    case NX_TYPE_UINT32:
      FillInts<uint32_t>(data, n, fill);
      break;
    case NX_TYPE_INT64:
      FillInts<int64_t>(data, n, fill);
      break;
    case NX_TYPE_UINT64:
      FillInts<uint64_t>(data, n, fill);
      break;
    case NX_TYPE_BOOL:
      for (size_t i = 0; i < n; ++i) static_cast<uint8_t*>(data)[i] = IntValue(fill, i) & 1;
      break;
    default:
      break;  // 16-bit floats, float8, 4-bit types, complex: zeros are good enough
  }
}

// A tensor of the declared type and shape (unknown dimensions = 1, unknown rank = scalar), or
// nullptr when the input is not a tensor or is too large to be worth it.
inline NxValue* MakeInput(const NxTypeInfo& info, Fill fill) {
  if (info.kind != NX_VALUE_TENSOR) return nullptr;
  std::vector<int64_t> dims(info.dims, info.dims + (info.has_shape ? info.rank : 0));
  int64_t count = 1;
  for (int64_t& d : dims) {
    if (d < 0) d = 1;
    if (d != 0 && count > kMaxInputElements / d) return nullptr;
    count *= d;
  }
  if (count > kMaxInputElements) return nullptr;
  NxValue* v = nullptr;
  if (!Ok(NxValue_CreateTensor(info.element_type, dims.data(), dims.size(), &v))) return nullptr;
  // String tensors start as empty strings; nothing to fill.
  FillTensor(v, info.element_type, static_cast<size_t>(count), fill);
  return v;
}

inline void RunOnce(NxSession* session, Fill fill) {
  size_t num_inputs = NxSession_GetInputCount(session);
  std::vector<const char*> names;
  std::vector<NxValue*> inputs;
  bool runnable = true;
  for (size_t i = 0; i < num_inputs && runnable; ++i) {
    NxTypeInfo info{};
    if (!Ok(NxSession_GetInputTypeInfo(session, i, &info))) {
      runnable = false;
      break;
    }
    NxValue* v = MakeInput(info, fill);
    if (v == nullptr) {
      runnable = false;  // sequences, optionals and oversized inputs: session creation only
      break;
    }
    names.push_back(NxSession_GetInputName(session, i));
    inputs.push_back(v);
  }
  if (runnable) {
    size_t num_outputs = NxSession_GetOutputCount(session);
    std::vector<NxValue*> outputs(num_outputs, nullptr);
    NxRunOptions* run_options = nullptr;
    if (Ok(NxRunOptions_Create(&run_options))) {
      Ok(NxRunOptions_SetTimeout(run_options, kRunSeconds));
      Ok(NxSession_RunWithOptions(session, run_options, names.data(), inputs.data(), inputs.size(),
                                  nullptr, num_outputs, outputs.data()));
      NxRunOptions_Release(run_options);
    }
    for (NxValue* o : outputs) NxValue_Release(o);
  }
  for (NxValue* v : inputs) NxValue_Release(v);
}

// What the fuzzer does with one input: create a session from the bytes (1 intra-op thread) and,
// if that works, run it once on generated inputs. Everything is released again.
inline void CreateAndRun(NxEnv* env, const uint8_t* data, size_t size) {
  NxSessionOptions* options = nullptr;
  if (!Ok(NxSessionOptions_Create(&options))) return;
  Ok(NxSessionOptions_SetIntraOpThreads(options, 1));
  Ok(NxSessionOptions_SetLogLevel(options, NX_LOG_ERROR));
  Ok(NxSessionOptions_SetMemoryLimit(options, kSessionMemoryBytes));
  NxSession* session = nullptr;
  if (Ok(NxSession_CreateFromBuffer(env, data, size, options, &session))) {
    RunOnce(session, ChooseFill(data, size));
    NxSession_Release(session);
  }
  NxSessionOptions_Release(options);
}

}  // namespace nxrt_fuzz
