// com.nxrt TableLookup: Y[i] = table[X[i]] for an 8-bit X (an int8 value v indexes entry
// uint8_t(v)) and a constant 256-entry 8-bit table, Y of the table's type. The QDQ folding
// (src/session/qdq_folding.cc, qdq_tables.h) turns every island of elementwise float ops
// between a DequantizeLinear and a QuantizeLinear that computes a function of one 8-bit tensor
// (quantize_static's GELU, SiLU, HardSwish, ...) into one such node.
#include "kernels/quantized/table_lookup.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/linalg/quantized_common.h"
#include "kernels/quantized/quantized_kernels.h"

namespace nxrt::cpu::quantized {

namespace {

class TableLookup : public ep::Kernel {
 public:
  explicit TableLookup(const ep::KernelInfo& info) : op_(info.describe()) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::ConstTensor table = ctx.input(1);
    NXRT_EP_ENFORCE(linalg::IsInt8Type(x.type()), op_ + ": X must be int8 or uint8");
    NXRT_EP_ENFORCE(linalg::IsInt8Type(table.type()) && table.size() == 256,
                    op_ + ": the table must hold 256 int8 or uint8 values");
    uint8_t codes[256];
    std::memcpy(codes, table.raw(), sizeof(codes));
    ep::Tensor y = ctx.output(0, x.shape(), table.type());
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(y.mutable_raw());
    const auto body = HasAvx512Vbmi() ? TableLookupAvx512Vbmi : TableLookupScalar;
    ctx.parallel_for(x.size(), 1 << 16,
                     [&](size_t b, size_t e) { body(src + b, dst + b, e - b, codes); });
  }

 private:
  std::string op_;
};

}  // namespace

void RegisterTableLookupKernels(NxKernelRegistry* registry) {
  const std::vector<NxElementType> bytes = {NX_TYPE_UINT8, NX_TYPE_INT8};
  ep::KernelDefBuilder("TableLookup", "com.nxrt")
      .Versions(1)
      .Constraint("T1", bytes, {0}, {})
      .Constraint("T2", bytes, {1}, {0})
      .Build<TableLookup>(registry);
}

}  // namespace nxrt::cpu::quantized
