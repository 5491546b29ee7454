// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes and
// zeroes the rest. Each row is one kept run plus one zeroed run.
#include <algorithm>
#include <cstring>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

class Trilu : public ep::Kernel {
 public:
  explicit Trilu(const ep::KernelInfo& info) : upper_(info.attr_int("upper", 1) != 0) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto s = x.shape();
    NXRT_EP_ENFORCE(s.size() >= 2, "Trilu: input must have rank >= 2, got " + ShapeToString(s));
    int64_t k = ctx.has_input(1) ? ReadScalarInt(ctx.input(1), "Trilu", "k") : 0;
    ep::Tensor y = ctx.output(0, s, x.type());
    int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
    k = std::clamp<int64_t>(k, -rows - 1, cols + 1);  // beyond that nothing changes; no overflow
    int64_t total = ShapeSize(s);
    if (total == 0) return;
    int64_t all_rows = total / cols;
    DispatchMove(x.type(), [&]<class T>() {
      InView<T> src(x);
      OutView<T> dst(y);
      const T* in = src.data();
      T* out = dst.data();
      ParallelFor(ctx.threads(), all_rows, std::max<int64_t>(1, 16384 / cols),
                  [&](int64_t b, int64_t e) {
                    for (int64_t r = b; r < e; ++r) {
                      int64_t i = r % rows;
                      // Columns kept in this row: [i + k, cols) for upper, [0, i + k] for lower.
                      int64_t lo = upper_ ? std::clamp<int64_t>(i + k, 0, cols) : 0;
                      int64_t hi = upper_ ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
                      const T* ip = in + r * cols;
                      T* op = out + r * cols;
                      std::fill(op, op + lo, T{});
                      if (hi > lo) std::memcpy(op + lo, ip + lo, (hi - lo) * sizeof(T));
                      std::fill(op + hi, op + cols, T{});
                    }
                  });
      dst.Commit();
    });
  }

 private:
  bool upper_;
};

}  // namespace

void RegisterTrilu(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Trilu").Versions(14).Build<Trilu>(r);
}

}  // namespace nxrt::cpu::tensor
