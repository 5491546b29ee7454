// The fits behind the vectorised erf and Gelu (vec_math.cc, vec_math_avx512.cc). For Gelu, one
// branch-free formula for 0.5 x (1 + erf(x / sqrt 2)) over the whole float range, taken by the
// vectors with a lane in the negative tail (the others use the cheaper erf form).
//
// With a = |x| / sqrt 2 and t = 1 / (1 + a / 2), erfc(a) = t exp(-a^2 + P(s)), where
// s = K1 t - K2 maps t in [1 / 6.3, 1] (a in [0, 10.6]) onto [-1, 1] and P is a degree-9
// polynomial fitted for this file with numpy (weighted least squares against math.erfc on 6000
// Chebyshev nodes; 4.8e-8 in double, 3.2e-7 relative for erfc evaluated in float). Then
//   Gelu(x) = x (1 - erfc(a) / 2)  for x >= 0   (no cancellation: erfc(a) / 2 <= 1 / 2)
//   Gelu(x) = x erfc(a) / 2        for x < 0    (full relative accuracy in the negative tail)
// -a^2 = -x^2 / 2 comes from x directly, split exactly into hi + lo with an FMA, and enters the
// exponential's range reduction unrounded, so the large exponent does not amplify rounding.
// |x| is clamped at kGeluClamp (a = 10.25, inside the fit): beyond it Gelu(x) is x or 0 in float.
#pragma once

namespace nxrt::cpu::elementwise::gelu_erfc {

inline constexpr float kGeluClamp = 14.5f;
inline constexpr float kK1 = 2.3773584f;
inline constexpr float kK2 = 1.3773584f;
// P's coefficients, highest degree first (Horner order).
inline constexpr float kP[10] = {
    6.035413026e-05f,  7.278755947e-05f,  -5.775786121e-04f, -2.003774571e-04f, 3.900195239e-03f,
    -1.288573956e-03f, -3.027524613e-02f, 1.690623350e-02f,  5.754277110e-01f,  -5.640254617e-01f};
// erf(x) = x P(t) / Q(t) with t = x^2 / 16 for |x| <= 3.92 (a (5, 5) rational fit made for
// vec_math.cc with numpy against math.erf, max relative error 3e-7 in float): the cheaper form
// for vectors without a negative tail, and ErfArray. Highest degree first.
inline constexpr float kErfP[6] = {2.215459505e+00f, 1.865596070e+01f, 1.488356115e+01f,
                                   1.340174224e+01f, 2.991443013e+00f, 1.128379162e+00f};
inline constexpr float kErfQ[6] = {4.061109485e+01f, 7.442732445e+01f, 6.022222603e+01f,
                                   2.886105142e+01f, 7.984425788e+00f, 1.0f};
// ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with 9 significant bits: n * kLn2Hi is exact for |n| < 2^15.
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
inline constexpr float kLog2e = 1.44269504088896341f;

}  // namespace nxrt::cpu::elementwise::gelu_erfc
