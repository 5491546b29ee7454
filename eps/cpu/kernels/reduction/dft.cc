// DFT (opset 17: axis attribute; opset 20: axis input) and STFT (opset 17).
// Signals are [..., length, 1] (real) or [..., length, 2] (complex, interleaved); spectra are
// [..., bins, 2]. Transforms run in double precision (fft.h).
#include <complex>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

#include "common/dispatch.h"
#include "common/parallel.h"
#include "kernels/reduction/fft.h"
#include "kernels/reduction/reduce_ops.h"
#include "kernels/reduction/reduction_kernels.h"

namespace nxrt::cpu::reduction {
namespace {

using Complex = std::complex<double>;

int64_t ScalarInt(const ep::ConstTensor& t, const std::string& what) {
  NXRT_EP_ENFORCE(t.size() == 1, what + " must be a scalar");
  if (t.type() == NX_TYPE_INT64) return t.data<int64_t>()[0];
  if (t.type() == NX_TYPE_INT32) return t.data<int32_t>()[0];
  ep::Fail(NX_INVALID_ARGUMENT, what + " must be int32 or int64");
}

template <class T>
double AsDouble(T v) {
  return static_cast<double>(static_cast<ComputeT<T>>(v));
}

class Dft : public ep::Kernel {
 public:
  explicit Dft(const ep::KernelInfo& info)
      : axis_input_(info.opset() >= 20),
        axis_attr_(info.attr_int("axis", 1)),
        inverse_(info.attr_int("inverse", 0) != 0),
        onesided_(info.attr_int("onesided", 0) != 0) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const auto shape = x.shape();
    const int64_t rank = static_cast<int64_t>(shape.size());
    NXRT_EP_ENFORCE(rank >= 2 && (shape.back() == 1 || shape.back() == 2),
                    "DFT: input must be [..., length, 1] (real) or [..., length, 2] (complex)");
    int64_t axis = axis_attr_;
    if (axis_input_) {
      axis = -2;
      if (auto a = ctx.optional_input(2); a && a->size() > 0) axis = ScalarInt(*a, "DFT axis");
    }
    NXRT_EP_ENFORCE(axis >= -rank && axis < rank, "DFT: axis is out of range");
    if (axis < 0) axis += rank;
    NXRT_EP_ENFORCE(axis != rank - 1, "DFT: axis cannot be the last (real/imaginary) dimension");
    const int64_t len = shape[axis];
    const bool real_out = inverse_ && onesided_;  // inverse of a one-sided spectrum (irfft)
    int64_t n = real_out ? 2 * (len - 1) : len;
    if (auto d = ctx.optional_input(1); d && d->size() > 0) n = ScalarInt(*d, "DFT dft_length");
    NXRT_EP_ENFORCE(n > 0, "DFT: dft_length must be positive");
    const int64_t out_len = real_out ? n : onesided_ ? n / 2 + 1 : n;
    const int64_t channels = shape.back();
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
    for (int64_t i = axis + 1; i < rank - 1; ++i) inner *= shape[i];
    std::vector<int64_t> out_shape(shape.begin(), shape.end());
    out_shape[axis] = out_len;
    out_shape.back() = real_out ? 1 : 2;
    ep::Tensor y = ctx.output(0, out_shape, x.type());
    const Fft fft(n, inverse_);
    DispatchFloat(x.type(), [&]<class T>() {
      const T* in = x.data<T>();
      T* out = y.data<T>();
      ParallelFor(
          ctx.threads(), outer * inner, std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
            std::vector<Complex> buf(n), scratch;
            for (int64_t line = b; line < e; ++line) {
              const int64_t o = line / inner, i = line % inner;
              auto at_in = [&](int64_t t) { return ((o * len + t) * inner + i) * channels; };
              std::fill(buf.begin(), buf.end(), Complex(0));
              if (real_out) {
                // Rebuild the Hermitian spectrum from bins [0, n/2]; the imaginary parts of bin 0
                // (and of bin n/2 for even n) cannot be represented in a real signal and are
                // dropped.
                for (int64_t k = 0; k <= n / 2 && k < len; ++k) {
                  const T* p = in + at_in(k);
                  buf[k] = {AsDouble(p[0]), channels == 2 ? AsDouble(p[1]) : 0.0};
                }
                buf[0].imag(0);
                if (n % 2 == 0) buf[n / 2].imag(0);
                for (int64_t k = n / 2 + 1; k < n; ++k) buf[k] = std::conj(buf[n - k]);
              } else {
                for (int64_t t = 0; t < len && t < n; ++t) {
                  const T* p = in + at_in(t);
                  buf[t] = {AsDouble(p[0]), channels == 2 ? AsDouble(p[1]) : 0.0};
                }
              }
              fft.Run(buf.data(), scratch);
              const double scale = inverse_ ? 1.0 / static_cast<double>(n) : 1.0;
              for (int64_t k = 0; k < out_len; ++k) {
                const int64_t at = (o * out_len + k) * inner + i;
                if (real_out) {
                  out[at] = ToOut<T>(buf[k].real() * scale);
                } else {
                  out[2 * at] = ToOut<T>(buf[k].real() * scale);
                  out[2 * at + 1] = ToOut<T>(buf[k].imag() * scale);
                }
              }
            }
          });
    });
  }

 private:
  bool axis_input_;
  int64_t axis_attr_;
  bool inverse_;
  bool onesided_;
};

// STFT: signal [batch, length, 1|2], frame_step, optional window [frame_length], optional
// frame_length -> [batch, frames, bins, 2] with frames = 1 + (length - frame_length) / step.
class Stft : public ep::Kernel {
 public:
  explicit Stft(const ep::KernelInfo& info) : onesided_(info.attr_int("onesided", 1) != 0) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const auto shape = x.shape();
    NXRT_EP_ENFORCE(shape.size() == 3 && (shape[2] == 1 || shape[2] == 2),
                    "STFT: signal must be [batch, length, 1] or [batch, length, 2]");
    const int64_t batch = shape[0], len = shape[1], channels = shape[2];
    const int64_t step = ScalarInt(ctx.input(1), "STFT frame_step");
    NXRT_EP_ENFORCE(step > 0, "STFT: frame_step must be positive");
    auto window = ctx.optional_input(2);
    if (window && window->size() == 0) window.reset();
    int64_t fl = window ? static_cast<int64_t>(window->size()) : len;
    if (auto f = ctx.optional_input(3); f && f->size() > 0) {
      fl = ScalarInt(*f, "STFT frame_length");
      NXRT_EP_ENFORCE(!window || static_cast<int64_t>(window->size()) == fl,
                      "STFT: window length must equal frame_length");
    }
    NXRT_EP_ENFORCE(fl > 0 && fl <= len, "STFT: frame_length must be in [1, signal length]");
    if (window) {
      NXRT_EP_ENFORCE(window->type() == x.type(), "STFT: window type must match the signal type");
    }
    const int64_t frames = 1 + (len - fl) / step;
    const int64_t bins = onesided_ ? fl / 2 + 1 : fl;
    ep::Tensor y = ctx.output(0, {batch, frames, bins, 2}, x.type());
    const Fft fft(fl, false);
    DispatchFloat(x.type(), [&]<class T>() {
      const T* in = x.data<T>();
      const T* w = window ? window->data<T>() : nullptr;
      T* out = y.data<T>();
      ParallelFor(ctx.threads(), batch * frames, std::max<int64_t>(1, 4096 / fl),
                  [&](int64_t b, int64_t e) {
                    std::vector<Complex> buf(fl), scratch;
                    for (int64_t job = b; job < e; ++job) {
                      const int64_t bi = job / frames, f = job % frames;
                      const T* src = in + (bi * len + f * step) * channels;
                      for (int64_t t = 0; t < fl; ++t) {
                        const double g = w ? AsDouble(w[t]) : 1.0;
                        buf[t] = {AsDouble(src[t * channels]) * g,
                                  channels == 2 ? AsDouble(src[t * channels + 1]) * g : 0.0};
                      }
                      fft.Run(buf.data(), scratch);
                      T* dst = out + job * bins * 2;
                      for (int64_t k = 0; k < bins; ++k) {
                        dst[2 * k] = ToOut<T>(buf[k].real());
                        dst[2 * k + 1] = ToOut<T>(buf[k].imag());
                      }
                    }
                  });
    });
  }

 private:
  bool onesided_;
};

}  // namespace

void RegisterDft(NxKernelRegistry* r) {
  const std::vector<NxElementType> types = {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_FLOAT16,
                                            NX_TYPE_BFLOAT16};
  ep::KernelDefBuilder("DFT").Versions(17).Constraint("T1", types, {0}, {0}).Build<Dft>(r);
  ep::KernelDefBuilder("STFT").Versions(17).Constraint("T1", types, {0, 2}, {0}).Build<Stft>(r);
}

}  // namespace nxrt::cpu::reduction
