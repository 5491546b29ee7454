// Generators for spectral processing (opset 17): HannWindow, HammingWindow, BlackmanWindow and
// MelWeightMatrix. Values are computed in double and stored as `output_datatype` (default float).
#include <cmath>
#include <cstdint>
#include <numbers>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

#include "common/attr_types.h"
#include "common/dispatch.h"
#include "common/float_to_int.h"
#include "kernels/reduction/reduce_ops.h"
#include "kernels/reduction/reduction_kernels.h"

namespace nxrt::cpu::reduction {
namespace {

double ScalarAsDouble(const ep::ConstTensor& t, const std::string& what) {
  NXRT_EP_ENFORCE(t.size() == 1, what + " must be a scalar");
  switch (t.type()) {
    case NX_TYPE_INT64:
      return static_cast<double>(t.data<int64_t>()[0]);
    case NX_TYPE_INT32:
      return t.data<int32_t>()[0];
    case NX_TYPE_FLOAT:
      return t.data<float>()[0];
    case NX_TYPE_DOUBLE:
      return t.data<double>()[0];
    case NX_TYPE_FLOAT16:
      return static_cast<float>(t.data<Half>()[0]);
    case NX_TYPE_BFLOAT16:
      return static_cast<float>(t.data<BFloat16>()[0]);
    default:
      ep::Fail(NX_INVALID_ARGUMENT, what + ": unsupported element type");
  }
}

// Writes doubles as the requested element type.
void Store(ep::Tensor& y, NxElementType type, const std::vector<double>& v) {
  DispatchNumeric(type, [&]<class T>() {
    T* out = y.data<T>();
    for (size_t i = 0; i < v.size(); ++i) out[i] = ToOut<T>(v[i]);
  });
}

enum class Window { kHann, kHamming, kBlackman };

template <Window W>
class WindowKernel : public ep::Kernel {
 public:
  explicit WindowKernel(const ep::KernelInfo& info)
      : periodic_(info.attr_int("periodic", 1) != 0),
        type_(AttrElementType(info, "output_datatype", NX_TYPE_FLOAT)) {}

  void Compute(ep::KernelContext& ctx) override {
    const double size_d = ScalarAsDouble(ctx.input(0), "window size");
    const int64_t n = static_cast<int64_t>(size_d);
    NXRT_EP_ENFORCE(n >= 0, "window size must be non-negative");
    ep::Tensor y = ctx.output(0, {n}, type_);
    // Periodic windows have period n (for spectral analysis), symmetric ones n - 1.
    const double period = periodic_ ? static_cast<double>(n) : static_cast<double>(n - 1);
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) {
      if (period <= 0) {  // a symmetric window of one sample
        v[i] = 1.0;
        continue;
      }
      const double a = 2.0 * std::numbers::pi * static_cast<double>(i) / period;
      if constexpr (W == Window::kHann) {
        v[i] = 0.5 - 0.5 * std::cos(a);
      } else if constexpr (W == Window::kHamming) {
        constexpr double kAlpha = 25.0 / 46.0;
        v[i] = kAlpha - (1.0 - kAlpha) * std::cos(a);
      } else {
        v[i] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2.0 * a);
      }
    }
    Store(y, type_, v);
  }

 private:
  bool periodic_;
  NxElementType type_;
};

// Triangular filters evenly spaced on the mel scale (mel = 2595 log10(1 + hz / 700)) between the
// edge frequencies, mapped onto the dft_length / 2 + 1 spectrogram bins: [bins, num_mel_bins].
class MelWeightMatrix : public ep::Kernel {
 public:
  explicit MelWeightMatrix(const ep::KernelInfo& info)
      : type_(AttrElementType(info, "output_datatype", NX_TYPE_FLOAT)) {}

  void Compute(ep::KernelContext& ctx) override {
    const int64_t mels = static_cast<int64_t>(ScalarAsDouble(ctx.input(0), "num_mel_bins"));
    const int64_t dft = static_cast<int64_t>(ScalarAsDouble(ctx.input(1), "dft_length"));
    const double rate = ScalarAsDouble(ctx.input(2), "sample_rate");
    const double lo_hz = ScalarAsDouble(ctx.input(3), "lower_edge_hertz");
    const double hi_hz = ScalarAsDouble(ctx.input(4), "upper_edge_hertz");
    NXRT_EP_ENFORCE(mels > 0 && dft > 0 && rate > 0,
                    "MelWeightMatrix: num_mel_bins, dft_length and sample_rate must be positive");
    const int64_t bins = dft / 2 + 1;
    auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double lo_mel = to_mel(lo_hz), hi_mel = to_mel(hi_hz);
    const double step = (hi_mel - lo_mel) / static_cast<double>(mels + 2);
    // Filter edges as spectrogram bin indices.
    std::vector<int64_t> edge(mels + 2);
    for (int64_t k = 0; k < mels + 2; ++k) {
      const double hz = 700.0 * (std::pow(10.0, (lo_mel + k * step) / 2595.0) - 1.0);
      edge[k] = SaturatingToInt64(std::floor(static_cast<double>(dft + 1) * hz / rate));
    }
    std::vector<double> w(bins * mels, 0.0);
    auto set = [&](int64_t bin, int64_t m, double v) {
      if (bin >= 0 && bin < bins) w[bin * mels + m] = v;
    };
    for (int64_t m = 0; m < mels; ++m) {
      const int64_t left = edge[m], center = edge[m + 1], right = edge[m + 2];
      if (center == left) {
        set(center, m, 1.0);
      } else {
        for (int64_t j = left; j <= center; ++j) {
          set(j, m, static_cast<double>(j - left) / static_cast<double>(center - left));
        }
      }
      for (int64_t j = center; j < right; ++j) {
        set(j, m, static_cast<double>(right - j) / static_cast<double>(right - center));
      }
    }
    ep::Tensor y = ctx.output(0, {bins, mels}, type_);
    Store(y, type_, w);
  }

 private:
  NxElementType type_;
};

}  // namespace

void RegisterSignalWindows(NxKernelRegistry* r) {
  ep::KernelDefBuilder("HannWindow").Versions(17).Build<WindowKernel<Window::kHann>>(r);
  ep::KernelDefBuilder("HammingWindow").Versions(17).Build<WindowKernel<Window::kHamming>>(r);
  ep::KernelDefBuilder("BlackmanWindow").Versions(17).Build<WindowKernel<Window::kBlackman>>(r);
  ep::KernelDefBuilder("MelWeightMatrix").Versions(17).Build<MelWeightMatrix>(r);
}

}  // namespace nxrt::cpu::reduction
