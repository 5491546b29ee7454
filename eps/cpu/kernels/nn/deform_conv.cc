// DeformConv (opsets 19-22), 2-D: a convolution whose kernel taps are displaced by learned
// per-position offsets (and optionally scaled by a mask). Each batch item is lowered to a
// bilinearly sampled column matrix [positions, C/group * kH * kW] per group, then multiplied by
// the group's weights.
#include <cmath>

#include "common/parallel.h"
#include "kernels/nn/gemm_nt.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

class DeformConv : public ep::Kernel {
 public:
  explicit DeformConv(const ep::KernelInfo& info) {
    group_ = info.attr_int("group", 1);
    offset_group_ = info.attr_int("offset_group", 1);
    kernel_ = info.attr_ints("kernel_shape");
    strides_ = info.attr_ints("strides", {1, 1});
    dilations_ = info.attr_ints("dilations", {1, 1});
    pads_ = info.attr_ints("pads", {0, 0, 0, 0});
    NXRT_EP_ENFORCE(group_ > 0 && offset_group_ > 0,
                    "DeformConv: group and offset_group must be positive");
    NXRT_EP_ENFORCE(strides_.size() == 2 && dilations_.size() == 2 && pads_.size() == 4 &&
                        (kernel_.empty() || kernel_.size() == 2),
                    "DeformConv: only 2-D convolution is supported");
    for (int i = 0; i < 2; ++i) {
      NXRT_EP_ENFORCE(strides_[i] > 0 && dilations_[i] > 0 && pads_[i] >= 0 && pads_[i + 2] >= 0 &&
                          (kernel_.empty() || kernel_[i] > 0),
                      "DeformConv: strides, dilations and kernel_shape must be positive and pads "
                      "non-negative");
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), w = ctx.input(1), off = ctx.input(2);
    auto xs = x.shape(), ws = w.shape(), os = off.shape();
    NXRT_EP_ENFORCE(xs.size() == 4 && ws.size() == 4 && os.size() == 4,
                    "DeformConv: X, W and offset must be 4-D");
    const int64_t N = xs[0], C = xs[1], H = xs[2], Wd = xs[3];
    const int64_t OC = ws[0], Cg = ws[1];
    const int64_t kh = kernel_.empty() ? ws[2] : kernel_[0],
                  kw = kernel_.empty() ? ws[3] : kernel_[1];
    NXRT_EP_ENFORCE(kh == ws[2] && kw == ws[3], "DeformConv: kernel_shape does not match W");
    NXRT_EP_ENFORCE(C == Cg * group_ && OC % group_ == 0,
                    "DeformConv: channels " + DimsToString(xs) + " / weights " + DimsToString(ws) +
                        " do not match group " + std::to_string(group_));
    NXRT_EP_ENFORCE(C % offset_group_ == 0, "DeformConv: channels must divide into offset groups");
    const int64_t oh = (H + pads_[0] + pads_[2] - ((kh - 1) * dilations_[0] + 1)) / strides_[0] + 1;
    const int64_t ow =
        (Wd + pads_[1] + pads_[3] - ((kw - 1) * dilations_[1] + 1)) / strides_[1] + 1;
    const int64_t K = kh * kw, P = oh * ow;
    NXRT_EP_ENFORCE(os[0] == N && os[1] == offset_group_ * 2 * K && os[2] == oh && os[3] == ow,
                    "DeformConv: offset has shape " + DimsToString(os) + ", expected [" +
                        std::to_string(N) + ", " + std::to_string(offset_group_ * 2 * K) + ", " +
                        std::to_string(oh) + ", " + std::to_string(ow) + "]");
    auto bias = ctx.optional_input(3);
    auto mask = ctx.optional_input(4);
    if (bias)
      NXRT_EP_ENFORCE(static_cast<int64_t>(bias->size()) == OC,
                      "DeformConv: B must have OC values");
    if (mask) {
      auto ms = mask->shape();
      NXRT_EP_ENFORCE(
          ms.size() == 4 && ms[0] == N && ms[1] == offset_group_ * K && ms[2] == oh && ms[3] == ow,
          "DeformConv: mask has shape " + DimsToString(ms));
    }
    ep::Tensor y = ctx.output(0, {N, OC, oh, ow}, x.type());
    DispatchFloat(x.type(), [&]<class T>() {
      using A = AccOf<T>;
      auto widen = [](const ep::ConstTensor& t) {
        std::vector<A> v(t.size());
        DispatchFloat(t.type(), [&]<class U>() {
          const U* p = t.data<U>();
          for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<A>(static_cast<AccOf<U>>(p[i]));
        });
        return v;
      };
      std::vector<A> xa = widen(x), wa = widen(w), oa = widen(off);
      std::vector<A> ma = mask ? widen(*mask) : std::vector<A>();
      std::vector<A> ba = bias ? widen(*bias) : std::vector<A>(OC, A(0));
      const int64_t cols = Cg * K, ocg = OC / group_, per_og = C / offset_group_;
      std::vector<A> col(P * cols), res(P * ocg);
      T* yd = y.data<T>();
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t g = 0; g < group_; ++g) {
          // col[p, (c, k)] = mask * X[n, c](sampled at the displaced tap position).
          ParallelFor(ctx.threads(), P, 64, [&](int64_t begin, int64_t end) {
            for (int64_t p = begin; p < end; ++p) {
              const int64_t i = p / ow, j = p % ow;
              A* cr = col.data() + p * cols;
              for (int64_t cl = 0; cl < Cg; ++cl) {
                const int64_t c = g * Cg + cl, og = c / per_og;
                const A* plane = xa.data() + (n * C + c) * H * Wd;
                for (int64_t a = 0; a < kh; ++a) {
                  for (int64_t b = 0; b < kw; ++b) {
                    const int64_t k = a * kw + b;
                    const int64_t ob = ((n * offset_group_ + og) * 2 * K + 2 * k) * P + p;
                    A hy = static_cast<A>(i * strides_[0] - pads_[0] + a * dilations_[0]) + oa[ob];
                    A wx =
                        static_cast<A>(j * strides_[1] - pads_[1] + b * dilations_[1]) + oa[ob + P];
                    A m = ma.empty() ? A(1) : ma[((n * offset_group_ + og) * K + k) * P + p];
                    cr[cl * K + k] = m * Sample(plane, H, Wd, hy, wx);
                  }
                }
              }
            }
          });
          // res[p, oc] = col[p, :] . W[g * ocg + oc, :]
          GemmNT<A>(P, ocg, cols, col.data(), cols, wa.data() + g * ocg * cols, cols, res.data(),
                    ocg, false, ctx.threads());
          for (int64_t oc = 0; oc < ocg; ++oc) {
            T* out = yd + (n * OC + g * ocg + oc) * P;
            const A b = ba[g * ocg + oc];
            for (int64_t p = 0; p < P; ++p) out[p] = static_cast<T>(res[p * ocg + oc] + b);
          }
        }
      }
    });
  }

 private:
  // Bilinear sample with zeros outside the input.
  template <class A>
  static A Sample(const A* plane, int64_t H, int64_t W, A y, A x) {
    if (!(y > A(-1) && y < static_cast<A>(H) && x > A(-1) && x < static_cast<A>(W))) return A(0);
    A fy = std::floor(y), fx = std::floor(x);
    int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
    A ly = y - fy, lx = x - fx;
    auto at = [&](int64_t yy, int64_t xx) {
      return (yy >= 0 && yy < H && xx >= 0 && xx < W) ? plane[yy * W + xx] : A(0);
    };
    return (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) +
           ly * ((1 - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
  }

  int64_t group_ = 1, offset_group_ = 1;
  std::vector<int64_t> kernel_, strides_, dilations_, pads_;
};

}  // namespace

void RegisterDeformConvKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("DeformConv").Versions(19).Build<DeformConv>(registry);
}

}  // namespace nxrt::cpu::nn
