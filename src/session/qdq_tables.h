// Elementwise functions of 8-bit tensors, for QDQ folding (qdq_folding.cc): an int8 or uint8
// tensor has only 256 values, so whatever chain of elementwise float ops runs between its
// DequantizeLinear and the next QuantizeLinear (quantize_static's GELU: Div, Erf, Add 1, Mul x,
// Mul 0.5; SiLU: Sigmoid, Mul x; HardSwish, ...) is one 256-entry table of output codes, which
// the CPU EP's com.nxrt TableLookup applies in one pass over bytes.
//
// The tables are computed here, at session creation, the way the unfolded graph computes: DQ in
// float ((q - zero point) * scale), each op on float values (arithmetic in float, transcendental
// functions in double rounded to float), then Q (x / scale rounded half to even, plus the zero
// point, saturated). A function that meets NaN or an infinity on any of the 256 inputs is not
// tabulated.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>

#include "graph/graph.h"

namespace nxrt::qdq {

// The value of `v` if it is a float constant with one element: an initializer, a Constant
// node's tensor or value_float, or a DequantizeLinear of an 8-bit (or int32) one-element
// constant, itself possibly a QuantizeLinear of such a float constant (how quantize_static
// writes the constants of a quantized GELU).
std::optional<float> ConstantScalar(const Graph& g, int v);

using UnaryFn = std::function<float(float)>;
using BinaryFn = std::function<float(float, float)>;

// The function `n` computes elementwise of its input `x`, its other inputs being constant
// scalars: activations (Relu, LeakyRelu, Elu, Selu, Sigmoid, Tanh, Erf, Gelu, HardSigmoid,
// HardSwish, Softplus, Softsign, Exp, Log, Neg, Abs, Sqrt, Reciprocal, Clip) and Add, Sub, Mul,
// Div, Pow with a constant scalar on either side. nullopt for anything else.
std::optional<UnaryFn> UnaryFunctionOf(const Graph& g, const Node& n, int x);

// Add, Sub, Mul or Div of two tensors.
std::optional<BinaryFn> BinaryFunctionOf(const Node& n);

// Per-tensor quantization parameters of one 8-bit tensor.
struct Quantization {
  float scale = 1.0f;
  int32_t zero_point = 0;
  bool is_signed = false;  // int8 (else uint8)
};

// The real value of stored byte `code` (an int8 value v is stored as uint8_t(v)).
float Dequantize(const Quantization& q, int code);
// The stored byte of `x` quantized; nullopt for NaN.
std::optional<uint8_t> Quantize(const Quantization& q, float x);

// Output codes by input code.
using Table = std::array<uint8_t, 256>;

// out[code] = Q_out(real(code)) for every stored byte of an int8 (`is_signed`) or uint8 input;
// nullopt if `real` gives NaN or an infinity anywhere.
std::optional<Table> Tabulate(bool is_signed, const std::function<float(int code)>& real,
                              const Quantization& out);

}  // namespace nxrt::qdq
