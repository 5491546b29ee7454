// Vectorised float32 transcendental functions (AVX2 + FMA) over arrays, used by the hot
// activation kernels. Each is accurate to about 1e-6 relative (a few float ulps) over the whole
// float range and handles inf / NaN like the std:: functions. Array functions accept any n and
// x == y (in place).
#pragma once

#include <cstdint>

namespace nxrt::cpu::elementwise {

void ExpArray(const float* x, float* y, int64_t n);
void SigmoidArray(const float* x, float* y, int64_t n);
void TanhArray(const float* x, float* y, int64_t n);
void ErfArray(const float* x, float* y, int64_t n);
// x * sigmoid(alpha * x)
void SwishArray(const float* x, float* y, int64_t n, float alpha);
// 0.5 x (1 + erf(x / sqrt(2)))
void GeluArray(const float* x, float* y, int64_t n);
// GeluArray in place on `rows` rows of `cols` floats, `ld` apart: one call for a block of a
// matrix (a GEMM's finished panel), where a call per short row cost more than the function.
void GeluRows(float* p, int64_t ld, int64_t rows, int64_t cols);
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
void GeluTanhArray(const float* x, float* y, int64_t n);
// x * tanh(log(1 + exp(x)))
void MishArray(const float* x, float* y, int64_t n);

// The bodies behind SigmoidArray, SwishArray, GeluArray and GeluRows, which pick the AVX-512 ones
// when the CPU has AVX-512 (vec_math_avx512.cc); named for tests that check both.
void SigmoidArrayAvx2(const float* x, float* y, int64_t n);
void SwishArrayAvx2(const float* x, float* y, int64_t n, float alpha);
void SigmoidArrayAvx512(const float* x, float* y, int64_t n);
void SwishArrayAvx512(const float* x, float* y, int64_t n, float alpha);
void GeluArrayAvx2(const float* x, float* y, int64_t n);
void GeluArrayAvx512(const float* x, float* y, int64_t n);
void GeluRowsAvx512(float* p, int64_t ld, int64_t rows, int64_t cols);
bool VecMathHasAvx512();

}  // namespace nxrt::cpu::elementwise
