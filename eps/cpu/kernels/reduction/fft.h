// A small complex FFT in double precision for DFT and STFT: iterative radix-2 for power-of-two
// lengths, a direct DFT with an exact twiddle table otherwise.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

namespace nxrt::cpu::reduction {

class Fft {
 public:
  // Prepares transforms of length n; inverse uses e^{+i...} (no 1/n scaling here).
  Fft(int64_t n, bool inverse) : n_(n), pow2_(n > 0 && (n & (n - 1)) == 0) {
    const double sign = inverse ? 1.0 : -1.0;
    twiddle_.resize(n);
    for (int64_t k = 0; k < n; ++k) {
      const double a = sign * 2.0 * std::numbers::pi * static_cast<double>(k) / n;
      twiddle_[k] = {std::cos(a), std::sin(a)};
    }
    if (pow2_) {
      rev_.resize(n);
      int bits = 0;
      while ((int64_t{1} << bits) < n) ++bits;
      for (int64_t i = 0; i < n; ++i) {
        int64_t r = 0;
        for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
        rev_[i] = r;
      }
    }
  }

  int64_t size() const { return n_; }

  // Transforms `data` (length n) in place; `scratch` is reused between calls.
  void Run(std::complex<double>* data, std::vector<std::complex<double>>& scratch) const {
    if (n_ <= 1) return;
    if (pow2_) {
      for (int64_t i = 0; i < n_; ++i) {
        if (i < rev_[i]) std::swap(data[i], data[rev_[i]]);
      }
      for (int64_t len = 2; len <= n_; len <<= 1) {
        const int64_t half = len / 2, step = n_ / len;
        for (int64_t start = 0; start < n_; start += len) {
          for (int64_t k = 0; k < half; ++k) {
            const std::complex<double> t = twiddle_[k * step] * data[start + k + half];
            data[start + k + half] = data[start + k] - t;
            data[start + k] += t;
          }
        }
      }
      return;
    }
    scratch.assign(data, data + n_);
    for (int64_t k = 0; k < n_; ++k) {
      std::complex<double> acc = 0;
      int64_t w = 0;  // (j * k) mod n, advanced incrementally
      for (int64_t j = 0; j < n_; ++j) {
        acc += scratch[j] * twiddle_[w];
        w += k;
        if (w >= n_) w -= n_;
      }
      data[k] = acc;
    }
  }

 private:
  int64_t n_;
  bool pow2_;
  std::vector<std::complex<double>> twiddle_;
  std::vector<int64_t> rev_;
};

}  // namespace nxrt::cpu::reduction
