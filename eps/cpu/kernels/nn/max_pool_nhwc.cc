// com.nxrt MaxPool with channels_last=1: an 8-bit MaxPool over 2-D NHWC tensors [N, H, W, C].
// The quantized channels-last pass (src/session/qdq_channels_last.h) gives it the MaxPool that
// QDQ folding left between two NHWC convolutions, which otherwise paid a Transpose to NCHW and
// back around a plane-by-plane pool: 1.6 of ResNet-50 int8's 23.8 ms at one thread on Zen 4.
// In NHWC a window's taps are rows of C contiguous bytes, and the maximum runs over whole rows
// (the compiler's byte-max vectors). Attributes are MaxPool's; a window with no tap inside the
// input gives the type's lowest value, as the plane-by-plane kernel does.
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "common/parallel.h"
#include "kernels/nn/nn_common.h"
#include "kernels/nn/pool_geometry.h"

namespace nxrt::cpu::nn {
namespace {

class MaxPoolNhwc : public ep::Kernel {
 public:
  explicit MaxPoolNhwc(const ep::KernelInfo& info) : attrs_(info) {
    NXRT_EP_ENFORCE(info.attr_int("channels_last", 0) == 1,
                    "com.nxrt MaxPool: only channels_last=1 (NHWC) is implemented");
    NXRT_EP_ENFORCE(attrs_.kernel.size() == 2,
                    "com.nxrt MaxPool: only 2-D windows are implemented");
    NXRT_EP_ENFORCE(info.attr_int("storage_order", 0) == 0,
                    "com.nxrt MaxPool: storage_order must be 0");
    NXRT_EP_ENFORCE(info.output_count() == 1 || !info.output(1).present(),
                    "com.nxrt MaxPool: the Indices output is not implemented");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    auto xs = x.shape();
    NXRT_EP_ENFORCE(xs.size() == 4, "com.nxrt MaxPool: input of shape " + DimsToString(xs) +
                                        " is not NHWC of rank 4");
    const int64_t nchw[4] = {xs[0], xs[3], xs[1], xs[2]};
    const PoolGeometry g = ResolvePool(attrs_, nchw);
    const std::vector<int64_t> y_shape = {g.batch, g.out[1], g.out[2], g.channels};
    ep::Tensor y = ctx.output(0, y_shape, x.type());
    switch (x.type()) {
      case NX_TYPE_UINT8:
        return Run<uint8_t>(g, x.data<uint8_t>(), y.data<uint8_t>(), ctx.threads());
      case NX_TYPE_INT8:
        return Run<int8_t>(g, x.data<int8_t>(), y.data<int8_t>(), ctx.threads());
      default:
        ep::Fail(NX_INVALID_ARGUMENT, std::string("com.nxrt MaxPool: input type ") +
                                          ep::ElementTypeName(x.type()) + " is not uint8 or int8");
    }
  }

 private:
  // out[i] = max(out[i], in[i]) for `count` bytes, 32 at a time (the EP's baseline is AVX2).
  template <class T>
  static void MaxInto(T* out, const T* in, int64_t count) {
    int64_t i = 0;
    for (; i + 32 <= count; i += 32) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out + i));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
      const __m256i m = std::is_signed_v<T> ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), m);
    }
    for (; i < count; ++i) out[i] = std::max(out[i], in[i]);
  }

  template <class T>
  static void Run(const PoolGeometry& g, const T* x, T* y, int threads) {
    const int64_t c = g.channels, ih = g.in[1], iw = g.in[2], oh = g.out[1], ow = g.out[2];
    if (c == 0) return;
    std::vector<Taps> rows(static_cast<size_t>(oh)), cols(static_cast<size_t>(ow));
    for (int64_t o = 0; o < oh; ++o) rows[o] = WindowTaps(o, g.s[1], g.pb[1], g.k[1], g.d[1], ih);
    for (int64_t o = 0; o < ow; ++o) cols[o] = WindowTaps(o, g.s[2], g.pb[2], g.k[2], g.d[2], iw);
    const int64_t work = std::max<int64_t>(1, ow * c * g.k[1] * g.k[2]);
    ParallelFor(threads, g.batch * oh, std::max<int64_t>(1, (int64_t{1} << 16) / work),
                [&](int64_t begin, int64_t end) {
                  for (int64_t row = begin; row < end; ++row) {
                    const int64_t n = row / oh, o = row % oh;
                    const Taps& r = rows[static_cast<size_t>(o)];
                    T* out = y + row * ow * c;
                    for (int64_t q = 0; q < ow; ++q, out += c) {
                      const Taps& k = cols[static_cast<size_t>(q)];
                      std::fill(out, out + c, std::numeric_limits<T>::lowest());
                      for (int64_t i = r.first; i < r.last; ++i) {
                        const T* in_row = x + (n * ih + r.start + i * g.d[1]) * iw * c;
                        for (int64_t j = k.first; j < k.last; ++j)
                          MaxInto(out, in_row + (k.start + j * g.d[2]) * c, c);
                      }
                    }
                  }
                });
  }

  PoolAttributes attrs_;
};

}  // namespace

void RegisterMaxPoolNhwcKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("MaxPool", "com.nxrt").Versions(1).Build<MaxPoolNhwc>(registry);
}

}  // namespace nxrt::cpu::nn
