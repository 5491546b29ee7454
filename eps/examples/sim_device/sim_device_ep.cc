// SimDevice: an example EP for an accelerator with its own memory, written with the C++ SDK
// (include/nxrt/nxrt_ep.hpp). It is the reference for docs/writing-an-ep.md and a test fixture:
// its memory (sim_memory.h) faults if the host ever dereferences it, so the host's placement,
// copies, aliasing and pre-packing are exercised for real.
//
// Read it top to bottom: kernels, the kernel registry, the EP, the factory (with the memory
// services it hands out, built in sim_memory.h), and the two exported entry points.
//
// Kernels (float32): Add, Sub, Mul (numpy broadcasting), Relu, MatMul (A x 2-D B; a constant B
// is pre-packed), Reshape (shape read on the host; the output aliases the input), Identity.
// Control flow (any fixed-size element type): the host's If, Loop and Scan, with the device
// helpers they need (stacking, slicing and transposing tensors in SimDevice memory); Loop also
// carries sequences and optionals (the host copies their tensors in and out element by element).
//
// Asynchronous mode (EP option async=1, ABI 13): the EP makes streams (sim_stream.h), a worker
// thread each; kernels and copies queue their work there and return, as on a real accelerator.
// A virtual NPU option copy_latency_us=N (--virtual npu:copy_latency_us=N) makes every copy into
// or out of that device take N microseconds more, in either mode, like a slow link.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <vector>

#include "sim_memory.h"
#include "sim_stream.h"

namespace sim {
namespace {

using namespace nxrt::ep;

constexpr const char* kEpName = "SimDevice";

// ---- Kernels ----------------------------------------------------------------------------------
// Inputs and outputs live in SimDevice memory (unless the definition says otherwise): every
// data pointer is a handle, turned into an address only through sim::Data / sim::Resolve.

// The numpy broadcast of two shapes.
std::vector<int64_t> BroadcastShape(std::span<const int64_t> a, std::span<const int64_t> b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    NXRT_EP_ENFORCE(da == db || da == 1 || db == 1, "shapes do not broadcast");
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// Element strides of `in` walked in `out`'s shape: 0 along broadcast dimensions.
std::vector<int64_t> BroadcastStrides(std::span<const int64_t> in,
                                      const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t d = in[in.size() - 1 - i];
    strides[out.size() - 1 - i] = d == 1 ? 0 : stride;
    stride *= d;
  }
  return strides;
}

// Add, Sub, Mul. Registered with MayInplace(0, 0): y may be a's buffer. The host offers that
// only when a has y's size, i.e. a is not broadcast, so y[i] is written right after a[i] is
// read and never before.
template <class Op>
class Binary : public Kernel {
 public:
  explicit Binary(const KernelInfo&) {}

  void Compute(KernelContext& ctx) override {
    ConstTensor a = ctx.input(0), b = ctx.input(1);
    const std::vector<int64_t> dims = BroadcastShape(a.shape(), b.shape());
    Tensor y = ctx.output(0, dims, a.type());
    const float* pa = Data<float>(a);
    const float* pb = Data<float>(b);
    float* py = Data<float>(y);
    if (y.size() == 0) return;
    if (dims.empty()) {  // scalars
      RunOn(ctx.stream(), [=] { py[0] = Op()(pa[0], pb[0]); });
      return;
    }
    RunOn(ctx.stream(),
          [=, sa = BroadcastStrides(a.shape(), dims), sb = BroadcastStrides(b.shape(), dims),
           size = y.size()] { Apply(pa, pb, py, dims, sa, sb, size); });
  }

 private:
  // y = Op(a, b) over `dims`, a and b read with their broadcast strides.
  static void Apply(const float* pa, const float* pb, float* py, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, size_t size) {
    const size_t rank = dims.size();
    const int64_t inner = dims.back();
    std::vector<int64_t> index(rank, 0);  // position in the outer dimensions
    int64_t oa = 0, ob = 0;               // offsets of that position in a and b
    for (size_t row = 0; row < size; row += static_cast<size_t>(inner)) {
      for (int64_t i = 0; i < inner; ++i)
        py[row + i] = Op()(pa[oa + i * sa.back()], pb[ob + i * sb.back()]);
      for (size_t d = rank - 1; d-- > 0;) {  // odometer step over the outer dimensions
        oa += sa[d];
        ob += sb[d];
        if (++index[d] < dims[d]) break;
        oa -= sa[d] * dims[d];
        ob -= sb[d] * dims[d];
        index[d] = 0;
      }
    }
  }
};

class Relu : public Kernel {
 public:
  explicit Relu(const KernelInfo&) {}

  void Compute(KernelContext& ctx) override {
    ConstTensor x = ctx.input(0);
    Tensor y = ctx.output(0, x.shape(), x.type());  // may be x's buffer (MayInplace(0, 0))
    const float* px = Data<float>(x);
    float* py = Data<float>(y);
    RunOn(ctx.stream(), [=, n = x.size()] {
      for (size_t i = 0; i < n; ++i) py[i] = px[i] < 0.0f ? 0.0f : px[i];  // keeps NaN
    });
  }
};

// MatMul of A [..., M, K] (or [K]) by a 2-D B [K, N]. The dot products want B column by column,
// so the kernel works on B transposed ([N, K]): a constant B is transposed once, at pre-pack
// time, into device memory the kernel owns; any other B is transposed in every Compute, into
// scratch device memory.
class MatMul : public PrePackingKernel {
 public:
  explicit MatMul(const KernelInfo&) {}

  bool PrePack(const ConstTensor& b, size_t input, Allocator allocator,
               const PrePackCache&) override {
    // Decline anything but the 2-D float B that Compute handles: it then arrives as an input.
    if (input != 1 || b.type() != NX_TYPE_FLOAT || b.rank() != 2) return false;
    k_ = b.dim(0);
    n_ = b.dim(1);
    // Own the packed copy: a Block from `allocator` (SimDevice memory, since that is the
    // kernel's memory) is freed when the kernel is destroyed. The weight itself is in host
    // memory. A real device would pack into a host staging buffer and upload it; here the EP
    // "is" the device and writes its own memory through Resolve. The cache (offered only for
    // host memory) is ignored: declining to share is always allowed.
    packed_ = Block(allocator, static_cast<size_t>(k_ * n_) * sizeof(float));
    Transpose(b.data<float>(), Resolve<float>(packed_.get(), packed_.size()), k_, n_);
    return true;
  }

  void Compute(KernelContext& ctx) override {
    ConstTensor a = ctx.input(0);
    int64_t k = k_, n = n_;
    const float* bt = nullptr;
    const float* b_data = nullptr;  // B to transpose first (not pre-packed, queued work)
    NxStream* const stream = ctx.stream();
    if (packed_.get() != nullptr) {
      // Once packed, input 1 is not read: the host may have freed the initializer.
      bt = Resolve<const float>(packed_.get(), packed_.size());
    } else {
      ConstTensor b = ctx.input(1);
      NXRT_EP_ENFORCE(b.rank() == 2, "MatMul: B must be 2-D");
      k = b.dim(0);
      n = b.dim(1);
      if (stream != nullptr) {
        b_data = Data<float>(b);  // transposed in the queued work: scratch ends with Compute
      } else {
        const size_t bytes = b.bytes();
        float* scratch =
            Resolve<float>(ctx.scratch(bytes), bytes);  // device memory until we return
        Transpose(Data<float>(b), scratch, k, n);
        bt = scratch;
      }
    }
    NXRT_EP_ENFORCE(a.rank() >= 1 && a.dim(a.rank() - 1) == k,
                    "MatMul: the last dimension of A must be " + std::to_string(k));
    std::vector<int64_t> dims = a.shape_vector();
    dims.back() = n;  // [..., M, K] -> [..., M, N], and [K] -> [N]
    size_t rows = 1;
    for (size_t d = 0; d + 1 < a.rank(); ++d) rows *= static_cast<size_t>(a.dim(d));
    Tensor y = ctx.output(0, dims, a.type());
    const float* pa = Data<float>(a);
    float* py = Data<float>(y);
    if (stream != nullptr) {  // queued: one worker, no session threads
      RunOn(stream, [=] {
        std::vector<float> transposed;
        const float* b = bt;
        if (b_data != nullptr) {
          transposed.resize(static_cast<size_t>(k * n));
          Transpose(b_data, transposed.data(), k, n);
          b = transposed.data();
        }
        Rows(pa, b, py, k, n, 0, rows);
      });
      return;
    }
    // Rows are independent: spread them over the session's intra-op threads, a few thousand
    // multiply-adds per chunk at least. Everything the chunks touch is resolved beforehand
    // (chunks must not throw).
    const size_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, k * n));
    ctx.parallel_for(rows, grain,
                     [=](size_t begin, size_t end) { Rows(pa, bt, py, k, n, begin, end); });
  }

 private:
  // Rows [begin, end) of y = a x b, with b given transposed ([n, k]).
  static void Rows(const float* pa, const float* bt, float* py, int64_t k, int64_t n, size_t begin,
                   size_t end) {
    for (size_t r = begin; r < end; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (int64_t p = 0; p < k; ++p) sum += pa[r * k + p] * bt[j * k + p];
        py[r * n + j] = sum;
      }
    }
  }

  static void Transpose(const float* b, float* bt, int64_t k, int64_t n) {
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j) bt[j * k + i] = b[i * n + j];
  }

  int64_t k_ = 0, n_ = 0;
  Block packed_;  // B transposed, in SimDevice memory; empty unless B was pre-packed
};

// Reshape. The shape input is registered as a host input: it arrives in host memory, readable
// directly, even when a SimDevice node produced it. The data is registered as an alias of the
// output: usually the host hands x's buffer out as y and nothing moves.
class Reshape : public Kernel {
 public:
  explicit Reshape(const KernelInfo& info) : allow_zero_(info.attr_int("allowzero", 0) != 0) {}

  void Compute(KernelContext& ctx) override {
    ConstTensor x = ctx.input(0), shape = ctx.input(1);
    NXRT_EP_ENFORCE(shape.memory()->device_type == NX_DEVICE_CPU,
                    "Reshape: the shape is not in host memory");
    std::vector<int64_t> dims(shape.data<int64_t>(), shape.data<int64_t>() + shape.size());
    int64_t known = 1;
    int infer = -1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 0 && !allow_zero_) {
        NXRT_EP_ENFORCE(i < x.rank(), "Reshape: a 0 names a dimension the input lacks");
        dims[i] = x.dim(i);
      }
      if (dims[i] == -1) {
        NXRT_EP_ENFORCE(infer < 0, "Reshape: more than one -1 in the shape");
        infer = static_cast<int>(i);
        continue;
      }
      NXRT_EP_ENFORCE(dims[i] >= 0, "Reshape: negative dimension in the shape");
      known *= dims[i];
    }
    if (infer >= 0) {
      NXRT_EP_ENFORCE(known > 0 && x.size() % known == 0,
                      "Reshape: no size for the -1 fits " + std::to_string(x.size()) + " elements");
      dims[infer] = static_cast<int64_t>(x.size()) / known;
    } else {
      NXRT_EP_ENFORCE(static_cast<size_t>(known) == x.size(),
                      "Reshape: the shape has " + std::to_string(known) + " elements, the input " +
                          std::to_string(x.size()));
    }
    Tensor y = ctx.output(0, dims, x.type());
    if (y.raw() == x.raw()) return;  // aliased: the data is already in place
    RunOn(ctx.stream(), [dst = Data<float>(y), src = Data<float>(x), bytes = x.bytes()] {
      std::memcpy(dst, src, bytes);
    });
  }

 private:
  bool allow_zero_;
};

// Identity (tensors): registered as an alias, so the output is usually the input's buffer.
class Identity : public Kernel {
 public:
  explicit Identity(const KernelInfo&) {}

  void Compute(KernelContext& ctx) override {
    ConstTensor x = ctx.input(0);
    Tensor y = ctx.output(0, x.shape(), x.type());
    if (y.raw() == x.raw() || x.bytes() == 0) return;
    RunOn(ctx.stream(), [dst = Resolve(y.raw(), y.bytes()), src = Resolve(x.raw(), x.bytes()),
                         bytes = x.bytes()] { std::memcpy(dst, src, bytes); });
  }
};

// ---- Control flow -----------------------------------------------------------------------------
// Only the host can run subgraphs, so If/Loop/Scan are the host's kernels (Host().Create*Kernel),
// registered here like any other. Their inputs and outputs live in SimDevice memory (except the
// condition and trip count, declared host inputs), and the bodies' values stay here between
// iterations. The host cannot touch SimDevice memory, so it hands the device work to helpers:
// stacking per-iteration outputs (Loop and Scan), slicing scan inputs and transposing for
// non-zero scan axes (Scan). All of them are byte moves within SimDevice memory.

// Calls per helper, for tests (SimDevice_HelperCalls).
std::atomic<size_t> g_concat_calls{0}, g_slice_calls{0}, g_transpose_calls{0};
// Helper calls that came through a version 13 *OnStream member (asynchronous mode).
std::atomic<size_t> g_queued_helper_calls{0};

// Bytes per element of a tensor the helpers move (fixed-size types only: the definitions below
// admit no strings, and sub-byte types have no per-element offset).
size_t ElementSize(NxElementType type) {
  const size_t bytes = ElementBytes(type, 1);
  if (bytes == 0 || ElementBytes(type, 2) != 2 * bytes)
    Fail(NX_NOT_IMPLEMENTED, "SimDevice control flow: no per-element size for this type");
  return bytes;
}

// output = parts stacked along a new first axis; every part is in SimDevice memory.
void Concat(const NxValue* const* parts, size_t count, NxValue* output) {
  ConstTensor out(output);
  char* dst = Resolve<char>(out.raw(), out.bytes());
  size_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    ConstTensor part(parts[i]);
    NXRT_EP_ENFORCE(offset + part.bytes() <= out.bytes(), "ConcatOutput: the parts overflow");
    if (part.bytes() > 0) std::memcpy(dst + offset, Data<char>(part), part.bytes());
    offset += part.bytes();
  }
  NXRT_EP_ENFORCE(offset == out.bytes(), "ConcatOutput: the parts do not fill the output");
  ++g_concat_calls;
}

// output = input[index] along axis 0.
void Slice(const NxValue* input, int64_t index, NxValue* output) {
  ConstTensor in(input), out(output);
  NXRT_EP_ENFORCE(in.rank() >= 1 && index >= 0 && index < in.dim(0),
                  "SliceAxis0: index out of range");
  const size_t bytes = out.bytes();
  NXRT_EP_ENFORCE(bytes * static_cast<size_t>(in.dim(0)) == in.bytes(),
                  "SliceAxis0: the output is not one slice of the input");
  if (bytes > 0)
    std::memcpy(Resolve(out.raw(), bytes), Data<char>(in) + static_cast<size_t>(index) * bytes,
                bytes);
  ++g_slice_calls;
}

// output = transpose(input, perm): output axis d is input axis perm[d].
void TransposeDevice(const size_t* perm, size_t rank, const NxValue* input, NxValue* output) {
  ConstTensor in(input), out(output);
  NXRT_EP_ENFORCE(in.rank() == rank && out.rank() == rank && in.size() == out.size(),
                  "Transpose: shapes do not match the permutation");
  ++g_transpose_calls;
  if (out.size() == 0) return;
  const size_t es = ElementSize(in.type());
  std::vector<size_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * static_cast<size_t>(in.dim(d));
  const char* src = Data<char>(in);
  char* dst = Resolve<char>(out.raw(), out.bytes());
  std::vector<size_t> index(rank, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    size_t from = 0;
    for (size_t d = 0; d < rank; ++d) from += index[d] * strides[perm[d]];
    std::memcpy(dst + o * es, src + from * es, es);
    for (size_t d = rank; d-- > 0;) {  // odometer over the output shape
      if (++index[d] < static_cast<size_t>(out.dim(d))) break;
      index[d] = 0;
    }
  }
}

// Concat queued on a stream (asynchronous mode): the blocks are checked and resolved now, the
// bytes move when the stream gets there (the host keeps the tensors alive until then).
void ConcatOnStream(const NxValue* const* parts, size_t count, NxValue* output, NxStream* stream) {
  ConstTensor out(output);
  struct Piece {
    const char* from;
    size_t bytes;
  };
  std::vector<Piece> pieces;
  size_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    ConstTensor part(parts[i]);
    NXRT_EP_ENFORCE(offset + part.bytes() <= out.bytes(), "ConcatOutput: the parts overflow");
    pieces.push_back({part.bytes() > 0 ? Data<char>(part) : nullptr, part.bytes()});
    offset += part.bytes();
  }
  NXRT_EP_ENFORCE(offset == out.bytes(), "ConcatOutput: the parts do not fill the output");
  char* dst = Resolve<char>(out.raw(), out.bytes());
  ++g_queued_helper_calls;
  RunOn(stream, [dst, pieces = std::move(pieces)] {
    size_t at = 0;
    for (const Piece& p : pieces) {
      if (p.bytes > 0) std::memcpy(dst + at, p.from, p.bytes);
      at += p.bytes;
    }
    ++g_concat_calls;
  });
}

// One helper per kernel, to show the ownership rule: the host owns it once Create*Kernel
// succeeds and calls Release when the kernel goes; when the call fails it is still ours. The
// version 13 members queue the same work on the node's stream (asynchronous mode).
NxLoopHelper* NewLoopHelper() {
  return new NxLoopHelper{
      NXRT_EP_API_VERSION,
      [](NxLoopHelper*, const NxValue* const* parts, size_t count, NxValue* output) {
        return Guard([&] { Concat(parts, count, output); });
      },
      [](NxLoopHelper* self) { delete self; },
      [](NxLoopHelper*, const NxValue* const* parts, size_t count, NxValue* output,
         NxStream* stream) { return Guard([&] { ConcatOnStream(parts, count, output, stream); }); },
  };
}

NxScanHelper* NewScanHelper() {
  return new NxScanHelper{
      NXRT_EP_API_VERSION,
      [](NxScanHelper*, const size_t* perm, size_t rank, const NxValue* in, NxValue* out) {
        return Guard([&] { TransposeDevice(perm, rank, in, out); });
      },
      [](NxScanHelper* self) { delete self; },
      [](NxScanHelper*, const NxValue* in, int64_t index, NxValue* out) {
        return Guard([&] { Slice(in, index, out); });
      },
      [](NxScanHelper*, const NxValue* const* parts, size_t count, NxValue* output) {
        return Guard([&] { Concat(parts, count, output); });
      },
      // On the stream: the host synchronises after a transpose or slice, so those queue the
      // work as it is (the tensors outlive it).
      [](NxScanHelper*, const size_t* perm, size_t rank, const NxValue* in, NxValue* out,
         NxStream* stream) {
        return Guard([&] {
          ++g_queued_helper_calls;
          std::vector<size_t> p(perm, perm + rank);
          RunOn(stream,
                [p = std::move(p), in, out] { TransposeDevice(p.data(), p.size(), in, out); });
        });
      },
      [](NxScanHelper*, const NxValue* in, int64_t index, NxValue* out, NxStream* stream) {
        return Guard([&] {
          ++g_queued_helper_calls;
          RunOn(stream, [=] { Slice(in, index, out); });
        });
      },
      [](NxScanHelper*, const NxValue* const* parts, size_t count, NxValue* output,
         NxStream* stream) { return Guard([&] { ConcatOnStream(parts, count, output, stream); }); },
  };
}

NxStatus* CreateIf(void*, const NxKernelInfo* info, NxKernel** out) {
  return Host().CreateIfKernel(info, out);
}

NxStatus* CreateLoop(void*, const NxKernelInfo* info, NxKernel** out) {
  NxLoopHelper* helper = NewLoopHelper();
  NxStatus* status = Host().CreateLoopKernel(info, helper, out);
  if (status != nullptr) helper->Release(helper);  // not taken: still ours
  return status;
}

NxStatus* CreateScan(void*, const NxKernelInfo* info, NxKernel** out) {
  NxScanHelper* helper = NewScanHelper();
  NxStatus* status = Host().CreateScanKernel(info, helper, out);
  if (status != nullptr) helper->Release(helper);
  return status;
}

// ---- Kernel registry --------------------------------------------------------------------------
// Opset ranges follow the ONNX since-versions. Where later versions only added element types,
// one open-ended range from the first version with today's semantics covers them for float.

void RegisterKernels(NxKernelRegistry* registry) {
  const std::vector<NxElementType> f32 = {NX_TYPE_FLOAT};
  // Add/Sub/Mul 7 brought numpy broadcasting (1 and 6 had a `broadcast` attribute); 13 and 14
  // added types.
  KernelDefBuilder("Add")
      .Versions(7)
      .Constraint("T", f32, {0, 1}, {0})
      .MayInplace(0, 0)
      .Build<Binary<std::plus<float>>>(registry);
  KernelDefBuilder("Sub")
      .Versions(7)
      .Constraint("T", f32, {0, 1}, {0})
      .MayInplace(0, 0)
      .Build<Binary<std::minus<float>>>(registry);
  KernelDefBuilder("Mul")
      .Versions(7)
      .Constraint("T", f32, {0, 1}, {0})
      .MayInplace(0, 0)
      .Build<Binary<std::multiplies<float>>>(registry);
  // Relu 6 dropped the legacy consumed_inputs attribute; 13 and 14 added types.
  KernelDefBuilder("Relu")
      .Versions(6)
      .Constraint("T", f32, {0}, {0})
      .MayInplace(0, 0)
      .Build<Relu>(registry);
  // MatMul 1, 9 and 13 differ only in types.
  KernelDefBuilder("MatMul").Versions(1).Constraint("T", f32, {0, 1}, {0}).Build<MatMul>(registry);
  // Reshape 5 took the shape as an input (1 had an attribute); 14 added allowzero, which the
  // kernel reads (absent = 0); 13, 19, 21, 23 and 24 added types.
  KernelDefBuilder("Reshape")
      .Versions(5)
      .Constraint("T", f32, {0}, {0})
      .Constraint("shape", {NX_TYPE_INT64}, {1})
      .HostInput(1)
      .Alias(0, 0)
      .Build<Reshape>(registry);
  // Identity 1, 13, 14 (sequences), 16, 19, 21, 23, 24 (optionals and types): tensors only.
  KernelDefBuilder("Identity")
      .Versions(1)
      .Constraint("T", f32, {0}, {0})
      .Alias(0, 0)
      .Build<Identity>(registry);

  // Control flow, every opset (Scan from 8, the first with today's body signature). The values
  // they carry may have any fixed-size element type: the helpers move bytes.
  const std::vector<NxElementType> any = {
      NX_TYPE_FLOAT,  NX_TYPE_DOUBLE, NX_TYPE_FLOAT16, NX_TYPE_BFLOAT16, NX_TYPE_INT8,
      NX_TYPE_INT16,  NX_TYPE_INT32,  NX_TYPE_INT64,   NX_TYPE_UINT8,    NX_TYPE_UINT16,
      NX_TYPE_UINT32, NX_TYPE_UINT64, NX_TYPE_BOOL};
  // If: the condition is read on the host.
  KernelDefBuilder("If")
      .Versions(1)
      .Constraint("B", {NX_TYPE_BOOL}, {0})
      .Constraint("V", any, {}, {-1})
      .HostInput(0)
      .BuildRaw(registry, &CreateIf, nullptr);
  // Loop: the trip count M and the condition are read on the host.
  KernelDefBuilder("Loop")
      .Versions(1)
      .Constraint("I", {NX_TYPE_INT64}, {0})
      .Constraint("B", {NX_TYPE_BOOL}, {1})
      .Constraint("V", any, {}, {-1})
      .ValueKinds(NX_KIND_TENSOR | NX_KIND_SEQUENCE | NX_KIND_OPTIONAL)
      .HostInput(0)
      .HostInput(1)
      .BuildRaw(registry, &CreateLoop, nullptr);
  // Scan 8 takes optional sequence lengths as input 0, read on the host; 9 on has no such input
  // (input 0 is then a state or scan input, in device memory).
  KernelDefBuilder("Scan")
      .Versions(8, 8)
      .Constraint("I", {NX_TYPE_INT64}, {0})
      .Constraint("V", any, {-1}, {-1})
      .HostInput(0)
      .BuildRaw(registry, &CreateScan, nullptr);
  KernelDefBuilder("Scan")
      .Versions(9)
      .Constraint("V", any, {-1}, {-1})
      .BuildRaw(registry, &CreateScan, nullptr);
}

// ---- EP and factory ---------------------------------------------------------------------------

struct SimEp {
  NxEp base;  // first member: the host sees an NxEp*
  const NxKernelRegistry* registry;
  // The hardware devices the session chose (SimDevice's virtual NPUs; none when the EP was
  // appended by name without them) and whether kernel nodes alternate between them (EP option
  // "spread": "first", the default, or "alternate").
  std::vector<const NxHardwareDevice*> devices;
  bool alternate = false;
  bool async = false;  // EP option "async": streams with a worker thread each (ABI 13)
  size_t claimed = 0;  // nodes claimed so far, for "alternate"
};

struct SimFactory {
  NxEpFactory base;  // first member: the host sees an NxEpFactory*
  NxKernelRegistry* registry = nullptr;
  int virtual_devices = 0;  // created so far (at most kDevices)
};

// The simulated device a virtual NPU of this EP stands for (its "sim_device" metadata).
int SimIndexOf(const NxHardwareDevice* device) {
  const std::string index = HardwareDeviceView(device).metadata_or("sim_device", "0");
  return index == "1" ? 1 : 0;
}

const char* EpGetName(const NxEp*) { return kEpName; }

NxStatus* EpGetKernelRegistry(NxEp* self, const NxKernelRegistry** registry) {
  *registry = reinterpret_cast<SimEp*>(self)->registry;
  return nullptr;
}

// Claims every node the registry has a kernel for, like the host's default, except a MatMul
// whose B is not known to be 2-D: the kernel could not run it, and another EP (the CPU) can.
// With "spread=alternate" and two devices, claimed nodes go to the devices in turn (a test of
// copies between two device memories); otherwise all go to the first device.
NxStatus* EpGetCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  auto* ep = reinterpret_cast<SimEp*>(self);
  const NxKernelRegistry* registry = ep->registry;
  return Guard([&] {
    for (size_t i = 0, count = Host().Graph_GetNodeCount(graph); i < count; ++i) {
      NodeView node(Host().Graph_GetNode(graph, i));
      if (!Host().KernelRegistry_HasKernel(registry, node.handle(), nullptr)) continue;
      if (node.op_type() == "MatMul") {
        const auto b_shape = node.input(1).shape();
        if (!b_shape || b_shape->size() != 2) continue;
      }
      const NxHardwareDevice* device = nullptr;
      if (ep->alternate && ep->devices.size() > 1)
        device = ep->devices[ep->claimed % ep->devices.size()];
      ++ep->claimed;
      AddNode(capability, node.handle(), device);
    }
  });
}

// Asynchronous mode: a stream (a worker thread) for whatever the host asks; otherwise none, and
// everything stays synchronous.
NxStatus* EpCreateStream(NxEp* self, const NxHardwareDevice*, NxStream** stream) {
  return Guard(
      [&] { *stream = reinterpret_cast<SimEp*>(self)->async ? &(new Stream)->base : nullptr; });
}

const char* FactoryGetName(const NxEpFactory*) { return kEpName; }
const char* FactoryGetVendor(const NxEpFactory*) { return "nxrt examples"; }
const char* FactoryGetVersion(const NxEpFactory*) { return "1.0.0"; }
uint32_t FactoryGetVendorId(const NxEpFactory*) { return 0; }
const NxMemoryInfo* FactoryGetMemoryInfo(const NxEpFactory*) { return &kMemory; }

// Called at registration once per virtual-device request: an NPU request adds one simulated
// device (at most two, each with a memory of its own); other types add nothing. No options.
NxStatus* FactoryCreateVirtualDevices2(NxEpFactory* self, NxDeviceType type,
                                       const NxKeyValue2* const* options, size_t num_options,
                                       NxVirtualDeviceList* created) {
  auto* factory = reinterpret_cast<SimFactory*>(self);
  return Guard([&] {
    if (type != NX_DEVICE_NPU) return;
    uint64_t latency_us = 0;
    for (size_t i = 0; i < num_options; ++i) {
      const std::string key = options[i]->key ? options[i]->key : "";
      const std::string value = options[i]->value ? options[i]->value : "";
      if (key != "copy_latency_us")
        Fail(NX_INVALID_ARGUMENT, std::string(kEpName) + ": unknown virtual NPU option '" + key +
                                      "' (it takes copy_latency_us)");
      char* end = nullptr;
      latency_us = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || value[0] == '-' || latency_us > 10'000'000)
        Fail(NX_INVALID_ARGUMENT, std::string(kEpName) + ": copy_latency_us is '" + value +
                                      "'; it takes microseconds from 0 to 10000000");
    }
    if (factory->virtual_devices == kDevices)
      Fail(NX_INVALID_ARGUMENT,
           std::string(kEpName) + " simulates at most " + std::to_string(kDevices) + " devices");
    const int index = factory->virtual_devices++;
    g_copy_latency_us[index] = latency_us;
    AddVirtualDevice(
        created, NX_DEVICE_NPU, "nxrt examples", 0, static_cast<uint32_t>(index),
        {{"sim_device", std::to_string(index)}, {"copy_latency_us", std::to_string(latency_us)}});
  });
}

// Only the virtual NPUs this factory created are SimDevice's devices.
NxStatus* FactoryGetSupportedDevices(NxEpFactory*, const NxHardwareDevice* const* devices,
                                     size_t num_devices, NxEpDeviceList* supported) {
  return Guard([&] {
    for (size_t i = 0; i < num_devices; ++i) {
      HardwareDeviceView device(devices[i]);
      if (device.type() == NX_DEVICE_NPU && device.is_virtual_from(kEpName))
        AddEpDevice(supported, device.handle(),
                    {{"sim_device", device.metadata_or("sim_device", "0")}});
    }
  });
}

// Each simulated device computes in its own memory (ABI 12).
const NxMemoryInfo* FactoryGetDeviceMemoryInfo(const NxEpFactory*, const NxHardwareDevice* device) {
  return &kMemories[SimIndexOf(device)];
}

NxStatus* FactoryCreateEp(NxEpFactory* self, const NxEpCreateArgs* args, NxEp** out) {
  return Guard([&] {
    auto ep = std::make_unique<SimEp>();  // value-initialised: unset members are NULL
    for (const EpDeviceView& d : EpDevicesOf(args)) ep->devices.push_back(d.hardware().handle());
    const char* spread = Host().Config_Get(args->session_config, "ep.simdevice.spread");
    const std::string how = spread != nullptr ? spread : "first";
    if (how != "first" && how != "alternate")
      Fail(NX_INVALID_ARGUMENT,
           std::string(kEpName) + ": option spread is '" + how + "'; it takes first or alternate");
    ep->alternate = how == "alternate";
    const char* async = Host().Config_Get(args->session_config, "ep.simdevice.async");
    const std::string mode = async != nullptr ? async : "0";
    if (mode != "0" && mode != "1")
      Fail(NX_INVALID_ARGUMENT,
           std::string(kEpName) + ": option async is '" + mode + "'; it takes 0 or 1");
    ep->async = mode == "1";
    ep->base.version = NXRT_EP_API_VERSION;
    ep->base.GetName = &EpGetName;
    ep->base.GetCapability = &EpGetCapability;
    ep->base.GetKernelRegistry = &EpGetKernelRegistry;
    ep->base.CreateAllocator = nullptr;  // no per-session allocator: the factory's serves all
    ep->base.CreateStream = &EpCreateStream;
    ep->registry = reinterpret_cast<SimFactory*>(self)->registry;
    *out = &ep.release()->base;
  });
}

void FactoryReleaseEp(NxEpFactory*, NxEp* ep) { delete reinterpret_cast<SimEp*>(ep); }

NxStatus* FactoryCreateAllocator(NxEpFactory*, const NxMemoryInfo* memory, NxAllocator** out) {
  return Guard([&] {
    const int device = DeviceOf(memory);
    if (device < 0) Fail(NX_INVALID_ARGUMENT, "SimDevice allocates SimDevice memory only");
    *out = NewAllocator(device);
  });
}

NxStatus* FactoryCreateDataTransfer(NxEpFactory*, NxDataTransfer** out) {
  return Guard([&] { *out = NewDataTransfer(); });
}

}  // namespace
}  // namespace sim

// ---- Entry points -----------------------------------------------------------------------------

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*,
                                                       NxEpFactory** factories,
                                                       size_t max_factories,
                                                       size_t* num_factories) {
  using namespace sim;
  if (host == nullptr) return nullptr;  // cannot even report an error
  // Memory services, pre-packing and the kernel context helpers are ABI version 2.
  if (host->version < 2)
    return host->CreateStatus(NX_INVALID_PLUGIN, "SimDevice needs plugin ABI 2");
  SetHost(host);
  // Copy latencies are per simulated device, process-wide: a new registration starts at none
  // until its virtual NPUs say otherwise.
  for (auto& latency : g_copy_latency_us) latency = 0;
  if (max_factories < 1) return host->CreateStatus(NX_INVALID_ARGUMENT, "no room for a factory");
  auto factory = std::make_unique<SimFactory>();
  NxStatus* status = Guard([&] {
    ThrowIfError(host->CreateKernelRegistry(&factory->registry));
    RegisterKernels(factory->registry);
  });
  if (status != nullptr) {
    if (factory->registry != nullptr) host->ReleaseKernelRegistry(factory->registry);
    return status;
  }
  NxEpFactory& f = factory->base;  // value-initialised: unset members are NULL
  f.version = NXRT_EP_API_VERSION;
  f.GetName = &FactoryGetName;
  f.GetVendor = &FactoryGetVendor;
  f.GetVersion = &FactoryGetVersion;
  f.GetVendorId = &FactoryGetVendorId;
  f.CreateEp = &FactoryCreateEp;
  f.ReleaseEp = &FactoryReleaseEp;
  f.GetMemoryInfo = &FactoryGetMemoryInfo;
  f.CreateAllocator = &FactoryCreateAllocator;
  f.CreateDataTransfer = &FactoryCreateDataTransfer;
  f.CreateVirtualDevices2 = &FactoryCreateVirtualDevices2;
  f.GetSupportedDevices = &FactoryGetSupportedDevices;
  f.GetDeviceMemoryInfo = &FactoryGetDeviceMemoryInfo;
  factories[0] = &factory.release()->base;
  *num_factories = 1;
  return nullptr;
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory* factory) {
  auto* sim_factory = reinterpret_cast<sim::SimFactory*>(factory);
  if (sim_factory->registry != nullptr)
    nxrt::ep::Host().ReleaseKernelRegistry(sim_factory->registry);
  delete sim_factory;
}

// Test hooks (not part of the EP ABI; found with dlsym): blocks of SimDevice memory allocated
// and not yet freed in this process, frees the allocator refused, tensors copied into, out of or
// within SimDevice memory, and control-flow helper calls.
extern "C" NXRT_EXPORT size_t SimDevice_LiveBlocks() { return sim::Memory::Get().live_blocks(); }
extern "C" NXRT_EXPORT size_t SimDevice_BadFrees() { return sim::Memory::Get().bad_frees(); }
extern "C" NXRT_EXPORT size_t SimDevice_Copies() { return sim::g_tensor_copies.load(); }
// Calls of one control-flow helper: "concat", "slice" or "transpose"; "queued": calls of any
// that came through a version 13 *OnStream member.
extern "C" NXRT_EXPORT size_t SimDevice_HelperCalls(const char* helper) {
  const std::string name = helper != nullptr ? helper : "";
  if (name == "concat") return sim::g_concat_calls.load();
  if (name == "slice") return sim::g_slice_calls.load();
  if (name == "transpose") return sim::g_transpose_calls.load();
  if (name == "queued") return sim::g_queued_helper_calls.load();
  return 0;
}
