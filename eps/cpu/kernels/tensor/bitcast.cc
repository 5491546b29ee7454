// BitCast (opset 26): the same bytes, read as another type of the same width.
#include "common/attr_types.h"
#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

size_t BitWidth(NxElementType t) {
  switch (t) {
    case NX_TYPE_INT4:
    case NX_TYPE_UINT4:
    case NX_TYPE_FLOAT4E2M1:
      return 4;
    case NX_TYPE_INT2:
    case NX_TYPE_UINT2:
      return 2;
    default:
      return ElementSize(t) * 8;
  }
}

class BitCast : public ep::Kernel {
 public:
  explicit BitCast(const ep::KernelInfo& info) : to_(AttrElementType(info, "to")) {
    NXRT_EP_ENFORCE(to_ != NX_TYPE_STRING && BitWidth(to_) > 0,
                    std::string("BitCast: unsupported target type ") + ep::ElementTypeName(to_));
  }
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    NXRT_EP_ENFORCE(x.type() != NX_TYPE_STRING, "BitCast: string input is not supported");
    NXRT_EP_ENFORCE(BitWidth(x.type()) == BitWidth(to_),
                    std::string("BitCast: ") + ep::ElementTypeName(x.type()) + " and " +
                        ep::ElementTypeName(to_) + " have different bit widths");
    ep::Tensor y = ctx.output(0, x.shape(), to_);
    ParallelMemcpy(y.size() ? y.mutable_raw() : nullptr, x.size() ? x.raw() : nullptr,
                   ByteSize(x.type(), x.size()), ctx.threads());
  }

 private:
  NxElementType to_;
};

}  // namespace

void RegisterBitCast(NxKernelRegistry* r) {
  ep::KernelDefBuilder("BitCast").Versions(26).Build<BitCast>(r);
}

}  // namespace nxrt::cpu::tensor
