// PlaneIntegerConv (eps/cpu/kernels/linalg/integer_conv_planes.h) on every path of the 8-bit
// GEMM this machine can run: the portable pairs and quads, AVX2 pairs, AVX512-VNNI and AVX-VNNI
// quads, and the AMX layout (k padded to 64, 32 channels a tile: kPortableAmx everywhere, the
// AMX tiles where AmxInt8Usable), with int32, requantized 8-bit and scaled float outputs through
// the AVX2 and (where the CPU has it) AVX-512 stores, equals the convolution computed directly.
// Paths the CPU lacks are skipped (and reported so); the portable stand-ins cover their layouts.
#include "kernels/linalg/integer_conv_planes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/cpu_features.h"
#include "kernels/linalg/quantized_common.h"
#include "kernels/quantized/int8_gemm_core.h"

namespace {

using nxrt::cpu::Isa;
using nxrt::cpu::linalg::ConvGeometry;
using nxrt::cpu::linalg::IntegerConvOutput;
using nxrt::cpu::linalg::PackPlaneConvWeights;
using nxrt::cpu::linalg::PlaneIntegerConv;
using nxrt::cpu::quantized::Int8GemmPath;

struct Case {
  std::string name;
  int64_t batch, in_c, h, w, out_c, kh, kw, group;
  int64_t stride, pad, dilation;
  bool x_signed, w_signed, per_channel_zp;
};

ConvGeometry Geometry(const Case& c) {
  ConvGeometry g;
  g.spatial = 2;
  g.batch = c.batch;
  g.in_channels = c.in_c;
  g.out_channels = c.out_c;
  g.group = c.group;
  g.in = {1, c.h, c.w};
  g.kernel = {1, c.kh, c.kw};
  g.stride = {1, c.stride, c.stride};
  g.dilation = {1, c.dilation, c.dilation};
  g.pad_begin = {0, c.pad, c.pad};
  g.pad_end = {0, c.pad, c.pad};
  for (int i = 1; i < 3; ++i) {
    const int64_t span = (g.kernel[i] - 1) * g.dilation[i] + 1;
    g.out[i] = (g.in[i] + g.pad_begin[i] + g.pad_end[i] - span) / g.stride[i] + 1;
  }
  return g;
}

struct Operands {
  std::vector<uint8_t> x, w;  // raw bytes (int8 two's complement where signed)
  int32_t x_zp = 0;
  std::vector<int32_t> w_zp, bias;
};

int32_t Value(uint8_t byte, bool is_signed) {
  return is_signed ? int32_t(static_cast<int8_t>(byte)) : int32_t(byte);
}

// sum over the group's channels and the taps inside the input of (x - x_zp)(w - w_zp[m]).
std::vector<int32_t> Reference(const Case& c, const ConvGeometry& g, const Operands& o) {
  const int64_t icg = c.in_c / c.group, ocg = c.out_c / c.group, oh = g.out[1], ow = g.out[2];
  std::vector<int32_t> y;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t m = 0; m < c.out_c; ++m) {
      const int32_t wz = o.w_zp[o.w_zp.size() > 1 ? static_cast<size_t>(m) : 0];
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          int64_t sum = 0;
          for (int64_t ci = 0; ci < icg; ++ci)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t iy = oy * c.stride - c.pad + ky * c.dilation;
                const int64_t ix = ox * c.stride - c.pad + kx * c.dilation;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                const int64_t ch = m / ocg * icg + ci;
                const int32_t xv =
                    Value(o.x[static_cast<size_t>(((n * c.in_c + ch) * c.h + iy) * c.w + ix)],
                          c.x_signed);
                const int32_t wv = Value(
                    o.w[static_cast<size_t>(((m * icg + ci) * c.kh + ky) * c.kw + kx)], c.w_signed);
                sum += int64_t(xv - o.x_zp) * (wv - wz);
              }
          y.push_back(static_cast<int32_t>(sum));
        }
    }
  return y;
}

Operands MakeOperands(const Case& c, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255), near(-12, 12);
  Operands o;
  o.x.resize(static_cast<size_t>(c.batch * c.in_c * c.h * c.w));
  o.w.resize(static_cast<size_t>(c.out_c * c.in_c / c.group * c.kh * c.kw));
  for (auto& v : o.x) v = static_cast<uint8_t>(byte(rng));
  for (auto& v : o.w) v = static_cast<uint8_t>(byte(rng));
  o.x_zp = (c.x_signed ? 0 : 128) + near(rng);
  for (int64_t m = 0; m < (c.per_channel_zp ? c.out_c : 1); ++m)
    o.w_zp.push_back((c.w_signed ? 0 : 128) + near(rng));
  for (int64_t m = 0; m < c.out_c; ++m) o.bias.push_back(near(rng) * 300);
  return o;
}

std::vector<Case> Cases() {
  return {
      {"1x1, 16 -> 96 (MobileNetV2's expansion)", 1, 16, 9, 23, 96, 1, 1, 1, 1, 0, 1, false, false,
       true},
      {"3x3 stride 2 padded, int8 x, uint8 w", 2, 5, 13, 17, 37, 3, 3, 1, 2, 1, 1, true, false,
       false},
      {"3x3 dilated, groups, 70 taps a group", 1, 16, 11, 12, 20, 3, 3, 2, 1, 2, 2, false, true,
       true},
      {"5x5, 40 channels (k past 64: two AMX tiles of k)", 1, 40, 8, 9, 33, 5, 5, 1, 1, 2, 1, false,
       true, false},
  };
}

// Every case on `path`: int32 outputs and requantized outputs (a fused Relu, per-channel scales
// that saturate about half of the outputs at either end) through each store this CPU has.
void ExpectPathEqualsTheDefinition(Int8GemmPath path) {
  std::vector<Isa> stores{Isa::kAvx2};
  if (nxrt::cpu::DetectedIsa() == Isa::kAvx512) stores.push_back(Isa::kAvx512);
  std::mt19937 rng(17);
  for (const Case& c : Cases()) {
    const ConvGeometry g = Geometry(c);
    const Operands o = MakeOperands(c, rng);
    const std::vector<int32_t> sums = Reference(c, g, o);
    const int64_t plane = g.out[1] * g.out[2];
    const int64_t kdim = c.in_c / c.group * c.kh * c.kw;
    std::vector<double> scale(static_cast<size_t>(c.out_c));
    for (int64_t m = 0; m < c.out_c; ++m) scale[static_cast<size_t>(m)] = 0.0004 * (1 + m % 5);
    const int32_t y_zp = 120, floor = 125;
    std::vector<uint8_t> want8(sums.size());
    for (size_t i = 0; i < sums.size(); ++i) {
      const int64_t m = static_cast<int64_t>(i) / plane % c.out_c;
      const int32_t s = sums[i] + o.bias[static_cast<size_t>(m)];
      nxrt::cpu::linalg::RequantizeRunScalar(&s, 1, scale[static_cast<size_t>(m)], y_zp, floor,
                                             &want8[i]);
    }
    const auto packed =
        PackPlaneConvWeights(path, o.w.data(), c.w_signed, c.out_c, kdim, c.group, o.w_zp);
    for (Isa isa : stores) {
      SCOPED_TRACE(c.name + (isa == Isa::kAvx512 ? ", AVX-512 stores" : ", AVX2 stores"));
      std::vector<int32_t> y32(sums.size(), -7);
      IntegerConvOutput out32;
      out32.y32 = y32.data();
      out32.isa = isa;
      PlaneIntegerConv(g, o.x.data(), c.x_signed, o.x_zp, packed, out32, 1);
      ASSERT_EQ(y32, sums);
      std::vector<uint8_t> y8(sums.size(), 7);
      IntegerConvOutput out8;
      out8.y8 = y8.data();
      out8.scale = scale.data();
      out8.zero_point = y_zp;
      out8.floor = floor;
      out8.bias = o.bias.data();
      out8.isa = isa;
      PlaneIntegerConv(g, o.x.data(), c.x_signed, o.x_zp, packed, out8, 1);
      ASSERT_EQ(y8, want8);
      // Float output (ConvIntegerToFloat): float(sum) * scale + bias, then a Clip(0, 6), each
      // step rounded as separate float operations.
      const float fscale = 0.0071f;
      std::vector<float> fbias(static_cast<size_t>(c.out_c));
      for (int64_t m = 0; m < c.out_c; ++m) fbias[static_cast<size_t>(m)] = 0.25f * (m % 9) - 1.0f;
      std::vector<float> wantf(sums.size());
      for (size_t i = 0; i < sums.size(); ++i) {
        const auto m = static_cast<size_t>(static_cast<int64_t>(i) / plane % c.out_c);
        volatile float product = static_cast<float>(sums[i]) * fscale;  // no fused multiply-add
        wantf[i] = std::min(std::max(product + fbias[m], 0.0f), 6.0f);
      }
      std::vector<float> yf(sums.size(), -7.0f);
      IntegerConvOutput outf;
      outf.yf = yf.data();
      outf.fscale = &fscale;
      outf.per_tensor_fscale = true;
      outf.fbias = fbias.data();
      outf.act_lo = 0.0f;
      outf.act_hi = 6.0f;
      outf.isa = isa;
      PlaneIntegerConv(g, o.x.data(), c.x_signed, o.x_zp, packed, outf, 1);
      ASSERT_EQ(yf, wantf);
    }
  }
}

TEST(PlaneIntegerConv, PortablePairsEqualTheDefinition) {
  ExpectPathEqualsTheDefinition(Int8GemmPath::kPortable);
}

TEST(PlaneIntegerConv, Avx2PairsEqualTheDefinition) {
  ExpectPathEqualsTheDefinition(Int8GemmPath::kAvx2);
}

TEST(PlaneIntegerConv, PortableQuadsEqualTheDefinition) {
  ExpectPathEqualsTheDefinition(Int8GemmPath::kPortableQuads);
}

TEST(PlaneIntegerConv, Avx512VnniEqualsTheDefinition) {
  if (!nxrt::cpu::quantized::CpuHasAvx512Vnni()) GTEST_SKIP() << "the CPU lacks AVX512-VNNI";
  ExpectPathEqualsTheDefinition(Int8GemmPath::kAvx512Vnni);
}

TEST(PlaneIntegerConv, AvxVnniEqualsTheDefinition) {
  if (!nxrt::cpu::quantized::CpuHasAvxVnni()) GTEST_SKIP() << "the CPU lacks AVX-VNNI";
  ExpectPathEqualsTheDefinition(Int8GemmPath::kAvxVnni);
}

// The AMX layout (k padded to 64, zero rows past the last channel, tiles of 32 channels) on the
// portable kernel: what the AMX path computes, on any machine.
TEST(PlaneIntegerConv, PortableAmxLayoutEqualsTheDefinition) {
  ExpectPathEqualsTheDefinition(Int8GemmPath::kPortableAmx);
}

TEST(PlaneIntegerConv, AmxEqualsTheDefinition) {
  if (!nxrt::cpu::quantized::AmxInt8Usable()) GTEST_SKIP() << "the CPU (or OS) has no usable AMX";
  ExpectPathEqualsTheDefinition(Int8GemmPath::kAmx);
}

}  // namespace
