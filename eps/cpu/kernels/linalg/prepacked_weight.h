// Pre-packed constant weights for the kernels of this family (NxKernel::PrePackWeight).
//
// A packing is one float32 block per weight input, made in PrePack from the allocator the host
// hands over. When the host offers a cache the block is stored there and the kernel borrows the
// canonical copy it gets back through UseSharedPrePacked (possibly another session's); otherwise
// the kernel owns the block. Either way the host may then free the initializer, so the kernel
// remembers the weight's element type and shape next to the data.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <nxrt/nxrt_ep.hpp>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/broadcast.h"
#include "common/dispatch.h"
#include "kernels/linalg/float_convert.h"
#include "kernels/linalg/transpose_to_float.h"

namespace nxrt::cpu::linalg {

// Float element types the packings convert to float32.
inline bool IsPackableFloat(NxElementType t) {
  return t == NX_TYPE_FLOAT || t == NX_TYPE_FLOAT16 || t == NX_TYPE_BFLOAT16;
}

// Whether input `index` is a constant 2-D float/float16/bfloat16 weight, the kind MatMul and
// Gemm pre-pack (a product through a packed weight that folds into one GEMM never calls sgemm,
// so the kernel need not start generating it, sgemm_warm_up.h).
inline bool IsPackableConstantMatrix(const ep::KernelInfo& info, size_t index) {
  const std::optional<ep::ConstTensor> w = info.constant_input(index);
  return w && w->rank() == 2 && IsPackableFloat(w->type()) && w->size() > 0;
}

// A float32 block holding `w` converted from float/float16/bfloat16; with `transpose`, the 2-D
// `w` [R, C] is stored as [C, R].
inline ep::Block PackFloatBlock(const ep::ConstTensor& w, ep::Allocator allocator, bool transpose) {
  ep::Block block(allocator, w.size() * sizeof(float));
  float* dst = block.as<float>();
  DispatchFloat(w.type(), [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) {
      ep::Fail(NX_INVALID_ARGUMENT, "double weights are not pre-packed");
    } else if (transpose) {
      TransposeToFloat(w.data<T>(), w.dim(0), w.dim(1), dst);
    } else if constexpr (std::is_same_v<T, float>) {
      std::memcpy(dst, w.data<float>(), w.size() * sizeof(float));
    } else {
      ToFloat(w.data<T>(), w.size(), dst);
    }
  });
  return block;
}

// One pre-packed float32 weight of a kernel (empty until packed).
class PackedFloatWeight {
 public:
  // `info`'s static type and shape of `input` describe the weight when the host hands over a
  // shared packing without calling PrePack (a later session of the process).
  PackedFloatWeight(const ep::KernelInfo& info, size_t input) : input_(input) {
    declared_type_ = info.input_type(input);
    if (auto s = info.input(input).shape()) {
      if (std::all_of(s->begin(), s->end(), [](int64_t d) { return d >= 0; })) declared_shape_ = s;
    }
  }

  bool packed() const { return data_ != nullptr; }
  const float* data() const { return data_; }
  NxElementType type() const { return type_; }  // of the original weight
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t size() const { return static_cast<size_t>(ShapeSize(shape_)); }

  // Finishes a PrePack call with `block` packed from `w`: stores it in `cache` when sharing is
  // offered (returns false: the data arrives through Adopt), otherwise keeps it (returns true:
  // data() is valid now). Sharing needs the graph's static description to match `w`, as that is
  // all a session that receives the shared copy without PrePack knows about the weight.
  bool StoreOrKeep(const ep::ConstTensor& w, ep::Block block, const ep::PrePackCache& cache) {
    type_ = w.type();
    shape_ = w.shape_vector();
    if (cache.available() && declared_type_ == type_ && declared_shape_ == shape_) {
      std::vector<ep::Block> blocks;
      blocks.push_back(std::move(block));
      cache.Store(blocks);
      return false;
    }
    owned_ = std::move(block);
    data_ = owned_.as<float>();
    return true;
  }

  // Takes the shared packing from UseSharedPrePacked (borrowed; the host keeps it alive for the
  // kernel's lifetime). `op` names the node in errors. `bytes_for(shape)`, if given, is the
  // packing's size for the weight's shape (a blocked layout); by default its floats.
  void Adopt(std::span<const void* const> buffers, std::span<const size_t> sizes,
             const std::string& op,
             const std::function<size_t(const std::vector<int64_t>&)>& bytes_for = {}) {
    if (type_ == NX_TYPE_UNDEFINED) {  // no PrePack in this session: the graph describes it
      NXRT_EP_ENFORCE(declared_shape_.has_value(), op + ": shared packing for input " +
                                                       std::to_string(input_) +
                                                       " but its shape is not static");
      type_ = declared_type_;
      shape_ = *declared_shape_;
    }
    const size_t want = bytes_for ? bytes_for(shape_) : size() * sizeof(float);
    NXRT_EP_ENFORCE(buffers.size() == 1 && sizes[0] == want && buffers[0] != nullptr,
                    op + ": shared packing for input " + std::to_string(input_) +
                        " does not match the weight " + ShapeToString(shape_) + " (" +
                        std::to_string(buffers.size()) + " buffers, " +
                        std::to_string(buffers.empty() ? 0 : sizes[0]) + " bytes)");
    data_ = static_cast<const float*>(buffers[0]);
  }

 private:
  size_t input_;
  NxElementType declared_type_ = NX_TYPE_UNDEFINED;
  std::optional<std::vector<int64_t>> declared_shape_;
  NxElementType type_ = NX_TYPE_UNDEFINED;
  std::vector<int64_t> shape_;
  const float* data_ = nullptr;
  ep::Block owned_;  // when not shared
};

}  // namespace nxrt::cpu::linalg
