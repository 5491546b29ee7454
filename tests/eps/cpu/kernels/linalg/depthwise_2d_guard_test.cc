// The depthwise bodies (eps/cpu/kernels/linalg/depthwise_2d_body.h) read border columns with
// whole-vector loads on AVX2 (simd_avx2.h: LoadAnd, where vmaskmovps is slow) and rely on those
// loads staying inside a page that holds data. Here every plane sits flush against an
// inaccessible page, after its last float or before its first, so a load that reaches past the
// tensor into the next page faults; outputs are compared with a scalar reference.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/linalg/depthwise_2d.h"

namespace nxrt::cpu::linalg {
namespace {

// `floats` floats placed right after an inaccessible page (at_end false) or ending right before
// one (at_end true).
class GuardedFloats {
 public:
  GuardedFloats(size_t floats, bool at_end) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t data_pages = (floats * sizeof(float) + page - 1) / page;
    size_ = (data_pages + 2) * page;
    void* base = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return;
    base_ = static_cast<char*>(base);
    mprotect(base_, page, PROT_NONE);
    mprotect(base_ + size_ - page, page, PROT_NONE);
    char* data = at_end ? base_ + size_ - page - floats * sizeof(float) : base_ + page;
    data_ = reinterpret_cast<float*>(data);
  }
  ~GuardedFloats() {
    if (base_ != nullptr) munmap(base_, size_);
  }
  GuardedFloats(const GuardedFloats&) = delete;
  GuardedFloats& operator=(const GuardedFloats&) = delete;
  float* data() const { return data_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  float* data_ = nullptr;
};

std::vector<float> Reference(const DepthwisePlane2d& p, const float* x, const float* w,
                             float bias) {
  std::vector<float> y(static_cast<size_t>(p.out_h * p.out_w));
  for (int64_t oh = 0; oh < p.out_h; ++oh) {
    for (int64_t ow = 0; ow < p.out_w; ++ow) {
      double sum = bias;
      for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
        for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
          const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
          const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
          if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
          sum += static_cast<double>(w[kh * p.kernel_w + kw]) * x[ih * p.in_w + iw];
        }
      }
      y[static_cast<size_t>(oh * p.out_w + ow)] = static_cast<float>(sum);
    }
  }
  return y;
}

using PlaneBody = void (*)(const DepthwisePlane2d&, const float*, const float*, const float*, float,
                           const float*, float*);

void ExpectBodyStaysInside(PlaneBody body, const std::string& isa) {
  struct Kernel {
    int64_t k_h, k_w, stride, pad;
  };
  // 3x3 / 5x5 take the row-reusing tiles, 7x7 and 1x5 the general ones.
  const Kernel kernels[] = {{3, 3, 1, 1}, {3, 3, 2, 1}, {5, 5, 1, 2}, {5, 5, 2, 2},
                            {3, 3, 1, 0}, {7, 7, 1, 3}, {1, 5, 2, 2}};
  for (const Kernel& k : kernels) {
    for (int64_t in_h : {1, 3, 10}) {
      for (int64_t in_w : {1, 2, 5, 7, 8, 9, 14, 16, 17, 23, 33}) {
        DepthwisePlane2d p;
        p.in_h = in_h;
        p.in_w = in_w;
        p.kernel_h = k.k_h;
        p.kernel_w = k.k_w;
        p.stride_h = p.stride_w = k.stride;
        p.pad_top = p.pad_left = k.pad;
        p.out_h = (in_h + 2 * k.pad - k.k_h) / k.stride + 1;
        p.out_w = (in_w + 2 * k.pad - k.k_w) / k.stride + 1;
        if (p.out_h < 1 || p.out_w < 1) continue;
        std::vector<float> w(static_cast<size_t>(k.k_h * k.k_w));
        for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f + 0.125f * static_cast<float>(i % 5);
        std::vector<float> zeros(static_cast<size_t>(ZeroRowFloats(p)), 0.0f);
        const size_t in_size = static_cast<size_t>(in_h * in_w);
        const size_t out_size = static_cast<size_t>(p.out_h * p.out_w);
        for (bool at_end : {false, true}) {
          GuardedFloats x(in_size, at_end), y(out_size, at_end);
          ASSERT_NE(x.data(), nullptr);
          ASSERT_NE(y.data(), nullptr);
          for (size_t i = 0; i < in_size; ++i) x.data()[i] = std::sin(0.7f * static_cast<float>(i));
          body(p, x.data(), zeros.data(), w.data(), 0.5f, nullptr, y.data());
          const std::vector<float> expected = Reference(p, x.data(), w.data(), 0.5f);
          for (size_t i = 0; i < out_size; ++i) {
            ASSERT_NEAR(y.data()[i], expected[i], 1e-5f)
                << isa << " " << k.k_h << "x" << k.k_w << " stride " << k.stride << " pad " << k.pad
                << ", " << in_h << "x" << in_w << (at_end ? " ending at" : " starting at")
                << " a guard page, output " << i;
          }
        }
      }
    }
  }
}

TEST(Depthwise2dGuard, Avx2LoadsStayInsideThePlanesPages) {
  ExpectBodyStaysInside(&Depthwise2dPlaneAvx2, "avx2");
}

TEST(Depthwise2dGuard, Avx512LoadsStayInsideThePlanesPages) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl")) {
    GTEST_SKIP() << "this CPU has no AVX-512";
  }
  ExpectBodyStaysInside(&Depthwise2dPlaneAvx512, "avx512");
}

}  // namespace
}  // namespace nxrt::cpu::linalg
