// DepthToSpace and SpaceToDepth: a reshape to 6-D, a permutation, and a reshape back. Only the
// permuted copy moves data.
#include "kernels/tensor/permute.h"
#include "kernels/tensor/tensor_kernels.h"

namespace nxrt::cpu::tensor {
namespace {

bool IsCrd(const ep::KernelInfo& info, const char* op) {
  std::string mode = info.attr_string("mode", "DCR");
  NXRT_EP_ENFORCE(mode == "DCR" || mode == "CRD",
                  std::string(op) + ": mode must be DCR or CRD, got '" + mode + "'");
  return mode == "CRD";
}

class DepthToSpace : public ep::Kernel {
 public:
  explicit DepthToSpace(const ep::KernelInfo& info)
      : block_(info.attr_int("blocksize")), crd_(IsCrd(info, "DepthToSpace")) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto s = x.shape();
    NXRT_EP_ENFORCE(s.size() == 4, "DepthToSpace: input must be 4-D, got " + ShapeToString(s));
    int64_t n = s[0], c = s[1], h = s[2], w = s[3], b = block_;
    NXRT_EP_ENFORCE(b > 0 && c % (b * b) == 0,
                    "DepthToSpace: channels " + std::to_string(c) +
                        " are not divisible by blocksize^2 = " + std::to_string(b * b));
    int64_t oc = c / (b * b);
    std::vector<int64_t> dims, perm;
    if (crd_) {
      dims = {n, oc, b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      dims = {n, b, b, oc, h, w};
      perm = {0, 3, 4, 1, 5, 2};
    }
    ep::Tensor y = ctx.output(0, {n, oc, h * b, w * b}, x.type());
    PermuteCopy(x, y, dims, perm, ctx.threads());
  }

 private:
  int64_t block_;
  bool crd_;
};

class SpaceToDepth : public ep::Kernel {
 public:
  explicit SpaceToDepth(const ep::KernelInfo& info)
      : block_(info.attr_int("blocksize")), crd_(IsCrd(info, "SpaceToDepth")) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto s = x.shape();
    NXRT_EP_ENFORCE(s.size() == 4, "SpaceToDepth: input must be 4-D, got " + ShapeToString(s));
    int64_t n = s[0], c = s[1], h = s[2], w = s[3], b = block_;
    NXRT_EP_ENFORCE(b > 0 && h % b == 0 && w % b == 0,
                    "SpaceToDepth: spatial dims " + ShapeToString(s) +
                        " are not divisible by blocksize " + std::to_string(b));
    std::vector<int64_t> dims = {n, c, h / b, b, w / b, b};
    std::vector<int64_t> perm =
        crd_ ? std::vector<int64_t>{0, 1, 3, 5, 2, 4} : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
    ep::Tensor y = ctx.output(0, {n, c * b * b, h / b, w / b}, x.type());
    PermuteCopy(x, y, dims, perm, ctx.threads());
  }

 private:
  int64_t block_;
  bool crd_;
};

}  // namespace

void RegisterDepthSpace(NxKernelRegistry* r) {
  ep::KernelDefBuilder("DepthToSpace").Versions(1).Build<DepthToSpace>(r);
  ep::KernelDefBuilder("SpaceToDepth").Versions(1).Build<SpaceToDepth>(r);
}

}  // namespace nxrt::cpu::tensor
