// TensorScatter (opset 24): the functional KV-cache update. The output is the past cache with,
// for every prefix index (axes before `axis`; the first is the batch), the update's sequence
// rows written at write_indices[batch] + s (modulo the cache length in circular mode). Every
// row is one contiguous block of the axes after `axis`.
#include <algorithm>
#include <cstring>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

class TensorScatter : public ep::Kernel {
 public:
  explicit TensorScatter(const ep::KernelInfo& info) : axis_(info.attr_int("axis", -2)) {
    std::string mode = info.attr_string("mode", "linear");
    NXRT_EP_ENFORCE(mode == "linear" || mode == "circular",
                    "TensorScatter: mode must be linear or circular, got '" + mode + "'");
    circular_ = mode == "circular";
  }
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor past = ctx.input(0), update = ctx.input(1);
    std::vector<int64_t> pd = past.shape_vector(), ud = update.shape_vector();
    int64_t rank = static_cast<int64_t>(pd.size());
    NXRT_EP_ENFORCE(rank >= 2 && ud.size() == pd.size(),
                    "TensorScatter: past_cache " + ShapeToString(pd) + " and update " +
                        ShapeToString(ud) + " must have the same rank >= 2");
    NXRT_EP_ENFORCE(update.type() == past.type(),
                    "TensorScatter: update and past_cache have different element types");
    int64_t axis = NormalizeAxis(axis_, rank, "TensorScatter");
    NXRT_EP_ENFORCE(axis > 0, "TensorScatter: axis must not be the batch axis");
    for (int64_t k = 0; k < rank; ++k) {
      NXRT_EP_ENFORCE(k == axis ? ud[k] <= pd[k] : ud[k] == pd[k],
                      "TensorScatter: update " + ShapeToString(ud) + " does not fit past_cache " +
                          ShapeToString(pd) + " along axis " + std::to_string(axis));
    }
    int64_t batch = pd[0], max_len = pd[axis], seq = ud[axis];
    std::vector<int64_t> writes(batch, 0);
    if (ctx.has_input(2)) {
      writes = ReadInts(ctx.input(2), "TensorScatter", "write_indices");
      NXRT_EP_ENFORCE(static_cast<int64_t>(writes.size()) == batch,
                      "TensorScatter: write_indices must have one entry per batch");
    }
    for (int64_t w : writes) {
      NXRT_EP_ENFORCE(w >= 0 && (circular_ || w + seq <= max_len),
                      "TensorScatter: write index " + std::to_string(w) + " with " +
                          std::to_string(seq) + " update rows exceeds the cache length " +
                          std::to_string(max_len));
    }
    ep::Tensor y = ctx.output(0, pd, past.type());
    // Strings are staged in full below; other types start from a bulk copy of the past.
    if (past.type() != NX_TYPE_STRING) CopyTensorData(past, y, ctx.threads());
    int64_t prefixes = Product(pd, 0, axis);  // batch-major prefix indices
    int64_t per_batch = prefixes / std::max<int64_t>(1, batch);
    int64_t inner = Product(pd, axis + 1, pd.size());
    if (ShapeSize(pd) == 0 || (seq * inner == 0 && past.type() != NX_TYPE_STRING)) return;
    DispatchMove(past.type(), [&]<class T>() {
      InView<T> src(update);
      OutView<T> dst(y);
      T* out = dst.data();
      if constexpr (std::is_same_v<T, std::string_view>) {
        InView<T> old(past);
        std::copy_n(old.data(), ShapeSize(pd), out);
      }
      const T* upd = src.data();
      for (int64_t p = 0; p < prefixes; ++p) {
        int64_t w = writes[p / per_batch];
        for (int64_t s = 0; s < seq; ++s) {
          int64_t row = circular_ ? (w + s) % max_len : w + s;
          std::memcpy(out + (p * max_len + row) * inner, upd + (p * seq + s) * inner,
                      static_cast<size_t>(inner) * sizeof(T));
        }
      }
      dst.Commit();
    });
  }

 private:
  int64_t axis_;
  bool circular_ = false;
};

}  // namespace

void RegisterTensorScatter(NxKernelRegistry* r) {
  ep::KernelDefBuilder("TensorScatter").Versions(24).Build<TensorScatter>(r);
}

}  // namespace nxrt::cpu::tensor
