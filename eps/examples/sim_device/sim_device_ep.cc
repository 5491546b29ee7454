// SimDevice: an example EP for an accelerator with its own memory, written with the C++ SDK
// (include/nxrt/nxrt_ep.hpp). It is the reference for docs/writing-an-ep.md and a test fixture:
// its memory (sim_memory.h) faults if the host ever dereferences it, so the host's placement,
// copies, aliasing and pre-packing are exercised for real.
//
// Read it top to bottom: kernels, the kernel registry, the EP, the factory (with the memory
// services it hands out, built in sim_memory.h), and the two exported entry points.
//
// Kernels (float32): Add, Sub, Mul (numpy broadcasting), Relu, MatMul (A x 2-D B; a constant B
// is pre-packed), Reshape (shape read on the host; the output aliases the input).
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <vector>

#include "sim_memory.h"

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
    Tensor y = ctx.output(0, dims);
    const float* pa = Data<float>(a);
    const float* pb = Data<float>(b);
    float* py = Data<float>(y);
    if (y.size() == 0) return;
    if (dims.empty()) {  // scalars
      py[0] = Op()(pa[0], pb[0]);
      return;
    }
    const std::vector<int64_t> sa = BroadcastStrides(a.shape(), dims);
    const std::vector<int64_t> sb = BroadcastStrides(b.shape(), dims);
    const size_t rank = dims.size();
    const int64_t inner = dims.back();
    std::vector<int64_t> index(rank, 0);  // position in the outer dimensions
    int64_t oa = 0, ob = 0;               // offsets of that position in a and b
    for (size_t row = 0; row < y.size(); row += static_cast<size_t>(inner)) {
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
    Tensor y = ctx.output(0, x.shape());  // may be x's buffer (MayInplace(0, 0))
    const float* px = Data<float>(x);
    float* py = Data<float>(y);
    for (size_t i = 0; i < x.size(); ++i) py[i] = px[i] < 0.0f ? 0.0f : px[i];  // keeps NaN
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
    if (packed_.get() != nullptr) {
      // Once packed, input 1 is not read: the host may have freed the initializer.
      bt = Resolve<const float>(packed_.get(), packed_.size());
    } else {
      ConstTensor b = ctx.input(1);
      NXRT_EP_ENFORCE(b.rank() == 2, "MatMul: B must be 2-D");
      k = b.dim(0);
      n = b.dim(1);
      const size_t bytes = b.bytes();
      float* scratch = Resolve<float>(ctx.scratch(bytes), bytes);  // device memory until we return
      Transpose(Data<float>(b), scratch, k, n);
      bt = scratch;
    }
    NXRT_EP_ENFORCE(a.rank() >= 1 && a.dim(a.rank() - 1) == k,
                    "MatMul: the last dimension of A must be " + std::to_string(k));
    std::vector<int64_t> dims = a.shape_vector();
    dims.back() = n;  // [..., M, K] -> [..., M, N], and [K] -> [N]
    size_t rows = 1;
    for (size_t d = 0; d + 1 < a.rank(); ++d) rows *= static_cast<size_t>(a.dim(d));
    Tensor y = ctx.output(0, dims);
    const float* pa = Data<float>(a);
    float* py = Data<float>(y);
    // Rows are independent: spread them over the session's intra-op threads, a few thousand
    // multiply-adds per chunk at least. Everything the chunks touch is resolved beforehand
    // (chunks must not throw).
    const size_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, k * n));
    ctx.parallel_for(rows, grain, [=](size_t begin, size_t end) {
      for (size_t r = begin; r < end; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          float sum = 0.0f;
          for (int64_t p = 0; p < k; ++p) sum += pa[r * k + p] * bt[j * k + p];
          py[r * n + j] = sum;
        }
      }
    });
  }

 private:
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
    Tensor y = ctx.output(0, dims);
    if (y.raw() == x.raw()) return;  // aliased: the data is already in place
    std::memcpy(Data<float>(y), Data<float>(x), x.bytes());
  }

 private:
  bool allow_zero_;
};

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
}

// ---- EP and factory ---------------------------------------------------------------------------

struct SimEp {
  NxEp base;  // first member: the host sees an NxEp*
  const NxKernelRegistry* registry;
};

struct SimFactory {
  NxEpFactory base;  // first member: the host sees an NxEpFactory*
  NxKernelRegistry* registry = nullptr;
};

const char* EpGetName(const NxEp*) { return kEpName; }

NxStatus* EpGetKernelRegistry(NxEp* self, const NxKernelRegistry** registry) {
  *registry = reinterpret_cast<SimEp*>(self)->registry;
  return nullptr;
}

// Claims every node the registry has a kernel for, like the host's default, except a MatMul
// whose B is not known to be 2-D: the kernel could not run it, and another EP (the CPU) can.
NxStatus* EpGetCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  const NxKernelRegistry* registry = reinterpret_cast<SimEp*>(self)->registry;
  return Guard([&] {
    for (size_t i = 0, count = Host().Graph_GetNodeCount(graph); i < count; ++i) {
      NodeView node(Host().Graph_GetNode(graph, i));
      if (!Host().KernelRegistry_HasKernel(registry, node.handle(), nullptr)) continue;
      if (node.op_type() == "MatMul") {
        const auto b_shape = node.input(1).shape();
        if (!b_shape || b_shape->size() != 2) continue;
      }
      ThrowIfError(Host().Capability_AddNode(capability, node.handle()));
    }
  });
}

const char* FactoryGetName(const NxEpFactory*) { return kEpName; }
const char* FactoryGetVendor(const NxEpFactory*) { return "nxrt examples"; }
const char* FactoryGetVersion(const NxEpFactory*) { return "1.0.0"; }
uint32_t FactoryGetVendorId(const NxEpFactory*) { return 0; }
const NxMemoryInfo* FactoryGetMemoryInfo(const NxEpFactory*) { return &kMemory; }

NxStatus* FactoryCreateEp(NxEpFactory* self, const NxEpCreateArgs*, NxEp** out) {
  return Guard([&] {
    auto ep = std::make_unique<SimEp>();  // value-initialised: unset members are NULL
    ep->base.version = NXRT_EP_API_VERSION;
    ep->base.GetName = &EpGetName;
    ep->base.GetCapability = &EpGetCapability;
    ep->base.GetKernelRegistry = &EpGetKernelRegistry;
    ep->base.CreateAllocator = nullptr;  // no per-session allocator: the factory's serves all
    ep->registry = reinterpret_cast<SimFactory*>(self)->registry;
    *out = &ep.release()->base;
  });
}

void FactoryReleaseEp(NxEpFactory*, NxEp* ep) { delete reinterpret_cast<SimEp*>(ep); }

NxStatus* FactoryCreateAllocator(NxEpFactory*, const NxMemoryInfo* memory, NxAllocator** out) {
  return Guard([&] {
    if (!IsSimDevice(memory))
      Fail(NX_INVALID_ARGUMENT, "SimDevice allocates SimDevice memory only");
    *out = NewAllocator();
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
// and not yet freed in this process, and frees the allocator refused.
extern "C" NXRT_EXPORT size_t SimDevice_LiveBlocks() { return sim::Memory::Get().live_blocks(); }
extern "C" NXRT_EXPORT size_t SimDevice_BadFrees() { return sim::Memory::Get().bad_frees(); }
