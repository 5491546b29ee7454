// Transpose: a permuted copy; the copy engine (strided_copy.h) merges axes that stay adjacent,
// copies contiguous runs with memcpy and blocks true 2-D transposes.
#include "kernels/tensor/permute.h"
#include "kernels/tensor/tensor_kernels.h"

namespace nxrt::cpu::tensor {
namespace {

class Transpose : public ep::Kernel {
 public:
  explicit Transpose(const ep::KernelInfo& info)
      : has_perm_(info.has_attr("perm")), perm_(info.attr_ints("perm")) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    Dims in_dims = Dims(x.shape());
    size_t rank = in_dims.size();
    Dims perm(rank);
    if (has_perm_) {
      NXRT_EP_ENFORCE(perm_.size() == rank, "Transpose: perm " + ShapeToString(perm_) +
                                                " does not match input rank " +
                                                std::to_string(rank));
      SmallVector<bool, 8> seen(rank, false);
      for (size_t i = 0; i < rank; ++i) {
        int64_t p = NormalizeAxis(perm_[i], static_cast<int64_t>(rank), "Transpose");
        NXRT_EP_ENFORCE(!seen[p],
                        "Transpose: perm " + ShapeToString(perm_) + " is not a permutation");
        seen[p] = true;
        perm[i] = p;
      }
    } else {
      for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
    }
    Dims out_dims(rank);
    for (size_t i = 0; i < rank; ++i) out_dims[i] = in_dims[perm[i]];
    ep::Tensor y = ctx.output(0, out_dims, x.type());
    PermuteCopy(x, y, in_dims, perm, ctx.threads());
  }

 private:
  bool has_perm_;
  std::vector<int64_t> perm_;
};

}  // namespace

void RegisterTranspose(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Transpose").Versions(1).Build<Transpose>(r);
}

}  // namespace nxrt::cpu::tensor
