// Det: determinant of each trailing M x M matrix, by LU decomposition with partial pivoting in
// double precision (exact enough for float/half inputs, and matches double inputs closely).
#include <cmath>
#include <type_traits>
#include <utility>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

double Determinant(std::vector<double>& a, int64_t m) {
  double det = 1.0;
  for (int64_t k = 0; k < m; ++k) {
    int64_t piv = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[i * m + k]) > std::fabs(a[piv * m + k])) piv = i;
    if (a[piv * m + k] == 0.0) return 0.0;
    if (piv != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[piv * m + j]);
      det = -det;
    }
    double p = a[k * m + k];
    det *= p;
    for (int64_t i = k + 1; i < m; ++i) {
      double f = a[i * m + k] / p;
      if (f == 0.0) continue;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

class Det : public ep::Kernel {
 public:
  explicit Det(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto s = x.shape();
    size_t r = s.size();
    NXRT_EP_ENFORCE(r >= 2 && s[r - 1] == s[r - 2],
                    "Det: input must be [*, M, M], got " + ShapeToString(s));
    int64_t m = s[r - 1];
    std::vector<int64_t> out_dims(s.begin(), s.end() - 2);
    ep::Tensor y = ctx.output(0, out_dims, x.type());
    int64_t batch = ShapeSize(out_dims);
    if (batch == 0) return;
    DispatchFloat(x.type(), [&]<class T>() {
      const T* in = m ? x.data<T>() : nullptr;
      T* out = y.data<T>();
      ParallelFor(ctx.threads(), batch, 1, [&](int64_t b, int64_t e) {
        std::vector<double> a(m * m);
        for (int64_t i = b; i < e; ++i) {
          for (int64_t j = 0; j < m * m; ++j) a[j] = static_cast<double>(in[i * m * m + j]);
          double v = Determinant(a, m);
          if constexpr (std::is_same_v<T, double>)
            out[i] = v;
          else
            out[i] = static_cast<T>(static_cast<float>(v));
        }
      });
    });
  }
};

}  // namespace

void RegisterDet(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Det").Versions(11).Constraint("T", FloatTypes(), {0}, {0}).Build<Det>(r);
}

}  // namespace nxrt::cpu::tensor
