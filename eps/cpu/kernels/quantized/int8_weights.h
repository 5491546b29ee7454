// The 8-bit weight operand of the ops on the blocked 8-bit GEMM (MatMulInteger, QLinearMatMul,
// MatMulIntegerToFloat, DynamicQuantizeMatMul, QGemm, QAttention): B with its scale and zero
// point, checked and packed (int8_gemm_core.h) once at kernel creation when all are constants,
// else on each run. One place for the rules, so every op names its inputs the same way in errors.
#pragma once

#include <cstddef>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <string>

#include "kernels/quantized/int8_gemm_core.h"

namespace nxrt::cpu::quantized {

constexpr size_t kNoWeightInput = static_cast<size_t>(-1);

// Where an op takes B, its scale and zero point, what it calls them, and B's accepted forms.
struct Int8WeightSlots {
  size_t b = 1;
  size_t scale = kNoWeightInput;  // none: integer-only products (the packing holds no scale)
  size_t zero = kNoWeightInput;   // none, or the input absent: zero point 0
  const char* b_name = "B";
  const char* scale_name = "b_scale";
  const char* zero_name = "b_zero_point";
  bool transposed = false;    // B stored [N, K] (QGemm's transB)
  bool leading_ones = false;  // B may have leading dimensions of 1 (MatMulInteger: [1, K, N])
};

// B, its scale and zero point checked against the slots' rules and packed for `path`; a rule
// broken is an error naming `op` and the input.
PackedInt8B PackInt8Weights(Int8GemmPath path, const Int8WeightSlots& slots,
                            const ep::ConstTensor& b, const std::optional<ep::ConstTensor>& scale,
                            const std::optional<ep::ConstTensor>& zero, const std::string& op);

// At kernel creation: the packing when B, its scale and (a present) zero point are constants that
// keep the rules; empty otherwise, so that a run packs them and reports what is wrong.
std::optional<PackedInt8B> PackConstantInt8Weights(const ep::KernelInfo& info, Int8GemmPath path,
                                                   const Int8WeightSlots& slots,
                                                   const std::string& op);

// In a run: `packed` (the creation's packing) when there is one, else the run's inputs packed
// into `local`.
const PackedInt8B& RunInt8Weights(ep::KernelContext& ctx, Int8GemmPath path,
                                  const Int8WeightSlots& slots,
                                  const std::optional<PackedInt8B>& packed,
                                  std::optional<PackedInt8B>& local, const std::string& op);

}  // namespace nxrt::cpu::quantized
