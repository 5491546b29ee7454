#include "kernels/quantized/int8_weights.h"

#include <exception>
#include <vector>

#include "common/broadcast.h"
#include "kernels/linalg/quantized_common.h"

namespace nxrt::cpu::quantized {
namespace {

bool Given(size_t index, size_t count) { return index != kNoWeightInput && index < count; }

}  // namespace

PackedInt8B PackInt8Weights(Int8GemmPath path, const Int8WeightSlots& slots,
                            const ep::ConstTensor& b, const std::optional<ep::ConstTensor>& scale,
                            const std::optional<ep::ConstTensor>& zero, const std::string& op) {
  NXRT_EP_ENFORCE(
      linalg::IsInt8Type(b.type()),
      op + ": " + slots.b_name + " must be int8 or uint8, got " + ep::ElementTypeName(b.type()));
  const size_t rank = b.rank();
  const bool shape_ok = slots.leading_ones ? rank >= 2 && static_cast<int64_t>(b.size()) ==
                                                              b.dim(rank - 2) * b.dim(rank - 1)
                                           : rank == 2;
  NXRT_EP_ENFORCE(shape_ok, op + ": " + slots.b_name +
                                (slots.leading_ones ? " must be a matrix (leading dimensions 1)"
                                                    : " must be 2-D") +
                                ", got " + ShapeToString(b.shape()));
  const int64_t rows = b.dim(rank - 2), cols = b.dim(rank - 1);
  const int64_t k = slots.transposed ? cols : rows, n = slots.transposed ? rows : cols;
  std::vector<float> s;
  if (slots.scale != kNoWeightInput) {
    NXRT_EP_ENFORCE(scale.has_value(), op + ": " + slots.scale_name + " is missing");
    NXRT_EP_ENFORCE(
        scale->type() == NX_TYPE_FLOAT,
        op + ": " + slots.scale_name + " must be float, got " + ep::ElementTypeName(scale->type()));
    s = linalg::ReadScale(*scale, n, op + ": " + slots.scale_name);
  }
  const std::vector<int32_t> z =
      linalg::ReadZeroPoint(zero, b.type(), n, op + ": " + slots.zero_name);
  return PackInt8B(path, b.raw(), b.type(), k, n, z, s, slots.transposed);
}

std::optional<PackedInt8B> PackConstantInt8Weights(const ep::KernelInfo& info, Int8GemmPath path,
                                                   const Int8WeightSlots& slots,
                                                   const std::string& op) {
  const size_t count = info.input_count();
  auto b = info.constant_input(slots.b);
  if (!b) return std::nullopt;
  std::optional<ep::ConstTensor> scale, zero;
  if (Given(slots.scale, count)) {
    scale = info.constant_input(slots.scale);
    if (!scale) return std::nullopt;
  }
  if (Given(slots.zero, count) && info.input(slots.zero).present()) {
    zero = info.constant_input(slots.zero);
    if (!zero) return std::nullopt;
  }
  try {
    return PackInt8Weights(path, slots, *b, scale, zero, op);
  } catch (const std::exception&) {
    return std::nullopt;  // the run reports it, with the node's name
  }
}

const PackedInt8B& RunInt8Weights(ep::KernelContext& ctx, Int8GemmPath path,
                                  const Int8WeightSlots& slots,
                                  const std::optional<PackedInt8B>& packed,
                                  std::optional<PackedInt8B>& local, const std::string& op) {
  if (packed) return *packed;
  const size_t count = ctx.input_count();
  std::optional<ep::ConstTensor> scale, zero;
  if (Given(slots.scale, count)) scale = ctx.optional_input(slots.scale);
  if (Given(slots.zero, count)) zero = ctx.optional_input(slots.zero);
  local = PackInt8Weights(path, slots, ctx.input(slots.b), scale, zero, op);
  return *local;
}

}  // namespace nxrt::cpu::quantized
