// "Packing" EP for the pre-packing, aliasing and in-place tests, written with the C++ SDK. Host
// memory. Kernels (float):
//   MatMul   2-D x 2-D; a constant B is pre-packed (transposed), shared when the host offers it,
//            owned otherwise. Counts PrePack and UseSharedPrePacked calls.
//   Add      same-shape inputs, may run in place over input 0; counts in-place runs.
//   Identity output aliases input 0; counts runs that found the data already in place.
// The counters are read by the tests through PackingEp_Counter (dlsym).
#include <atomic>
#include <cstring>
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <string>

namespace {

using namespace nxrt::ep;

std::atomic<long long> g_prepack_calls{0}, g_shared_calls{0}, g_inplace_hits{0}, g_alias_hits{0};
NxKernelRegistry* g_registry = nullptr;

class MatMulKernel : public PrePackingKernel {
 public:
  // A shared packing may arrive without a PrePack call (another session packed it), so the
  // weight's shape comes from the graph, not from PrePack.
  explicit MatMulKernel(const KernelInfo& info) : op_(info.describe()) {
    if (auto shape = info.input(1).shape(); shape && shape->size() == 2) {
      k_ = (*shape)[0];
      n_ = (*shape)[1];
    }
  }

  bool PrePack(const ConstTensor& w, size_t input, Allocator allocator,
               const PrePackCache& cache) override {
    ++g_prepack_calls;
    if (input != 1 || w.type() != NX_TYPE_FLOAT || w.rank() != 2) return false;
    k_ = w.dim(0);
    n_ = w.dim(1);
    std::vector<Block> blocks;
    blocks.emplace_back(allocator, static_cast<size_t>(k_ * n_) * sizeof(float));
    float* t = blocks[0].as<float>();
    for (int64_t i = 0; i < k_; ++i)
      for (int64_t j = 0; j < n_; ++j) t[j * k_ + i] = w.data<float>()[i * n_ + j];
    if (cache.available()) {
      cache.Store(blocks);  // the host hands the canonical copy back through UseSharedPrePacked
    } else {
      owned_ = std::move(blocks[0]);
      packed_ = owned_.as<float>();
    }
    return true;
  }

  void UseSharedPrePacked(size_t input, std::span<const void* const> buffers,
                          std::span<const size_t> sizes) override {
    ++g_shared_calls;
    NXRT_EP_ENFORCE(input == 1 && buffers.size() == 1 &&
                        sizes[0] == static_cast<size_t>(k_ * n_) * sizeof(float),
                    op_ + ": unexpected shared packing");
    packed_ = static_cast<const float*>(buffers[0]);
  }

  void Compute(KernelContext& ctx) override {
    ConstTensor a = ctx.input(0);
    const float* bt = packed_;
    int64_t k = k_, n = n_;
    std::vector<float> transposed;
    if (bt == nullptr) {  // B is not constant: transpose it now
      ConstTensor b = ctx.input(1);
      k = b.dim(0);
      n = b.dim(1);
      transposed.resize(static_cast<size_t>(k * n));
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < n; ++j) transposed[j * k + i] = b.data<float>()[i * n + j];
      bt = transposed.data();
    } else {
      NXRT_EP_ENFORCE(!ctx.has_input(1),
                      op_ + ": the host passed B although it was packed and released");
    }
    NXRT_EP_ENFORCE(a.rank() == 2 && a.dim(1) == k, op_ + ": shape mismatch");
    const int64_t m = a.dim(0);
    Tensor y = ctx.output(0, {m, n});
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float s = 0;
        for (int64_t p = 0; p < k; ++p) s += a.data<float>()[i * k + p] * bt[j * k + p];
        y.data<float>()[i * n + j] = s;
      }
  }

 private:
  std::string op_;
  int64_t k_ = 0, n_ = 0;
  Block owned_;
  const float* packed_ = nullptr;
};

class AddKernel : public Kernel {
 public:
  explicit AddKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) override {
    ConstTensor a = ctx.input(0), b = ctx.input(1);
    NXRT_EP_ENFORCE(a.size() == b.size(), "Add: shapes differ");
    Tensor y = ctx.output(0, a.shape());
    if (y.raw() == a.raw()) ++g_inplace_hits;
    for (size_t i = 0; i < a.size(); ++i)
      y.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
  }
};

class IdentityKernel : public Kernel {
 public:
  explicit IdentityKernel(const KernelInfo&) {}
  void Compute(KernelContext& ctx) override {
    ConstTensor x = ctx.input(0);
    Tensor y = ctx.output(0, x.shape());
    if (y.raw() == x.raw()) {
      ++g_alias_hits;
      return;
    }
    std::memcpy(y.mutable_raw(), x.raw(), x.bytes());
  }
};

const char* Name(const NxEpFactory*) { return "Packing"; }
const char* Vendor(const NxEpFactory*) { return "test"; }
const char* Version(const NxEpFactory*) { return "1.0.0"; }
uint32_t VendorId(const NxEpFactory*) { return 0; }
const char* EpName(const NxEp*) { return "Packing"; }
NxStatus* EpRegistry(NxEp*, const NxKernelRegistry** out) {
  *out = g_registry;
  return nullptr;
}
NxEp g_ep = {NXRT_EP_API_VERSION, EpName, nullptr, EpRegistry, nullptr};
NxStatus* CreateEp(NxEpFactory*, const NxEpCreateArgs*, NxEp** out) {
  *out = &g_ep;
  return nullptr;
}
void ReleaseEp(NxEpFactory*, NxEp*) {}
NxEpFactory g_factory = {NXRT_EP_API_VERSION, Name,    Vendor,  Version, VendorId, CreateEp,
                         ReleaseEp,           nullptr, nullptr, nullptr};

}  // namespace

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*,
                                                       NxEpFactory** out, size_t, size_t* n) {
  SetHost(host);
  return Guard([&] {
    ThrowIfError(host->CreateKernelRegistry(&g_registry));
    const std::vector<NxElementType> f32 = {NX_TYPE_FLOAT};
    KernelDefBuilder("MatMul")
        .Versions(1)
        .Constraint("T", f32, {-1}, {0})
        .Build<MatMulKernel>(g_registry);
    KernelDefBuilder("Add")
        .Versions(7)
        .Constraint("T", f32, {-1}, {0})
        .MayInplace(0, 0)
        .Build<AddKernel>(g_registry);
    KernelDefBuilder("Identity")
        .Versions(1)
        .Constraint("T", f32, {0}, {0})
        .Alias(0, 0)
        .Build<IdentityKernel>(g_registry);
    out[0] = &g_factory;
    *n = 1;
  });
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory*) {
  Host().ReleaseKernelRegistry(g_registry);
  g_registry = nullptr;
}

// Test hook: the value of one counter ("prepack", "shared", "inplace", "alias"), or -1.
extern "C" NXRT_EXPORT long long PackingEp_Counter(const char* name) {
  std::string n = name;
  if (n == "prepack") return g_prepack_calls;
  if (n == "shared") return g_shared_calls;
  if (n == "inplace") return g_inplace_hits;
  if (n == "alias") return g_alias_hits;
  return -1;
}
