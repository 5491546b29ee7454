// Printing values, filling random inputs and comparing values (for run and conformance).
#pragma once

#include <string>

#include <nxrt/nxrt.hpp>

namespace nxrt::cli {

// "float[1,1000]" ("sequence<float>(3)", "optional(empty)").
std::string Describe(const Value& v);
// The first `count` elements, space separated.
std::string FirstValues(const Value& v, size_t count);
// A tensor of `type`/`dims` with deterministic pseudo-random contents from `seed`.
Value RandomTensor(NxElementType type, const std::vector<int64_t>& dims, uint64_t seed);
// Whether `actual` matches `expected` like the ONNX backend tests compare (floats within
// atol + rtol*|expected|, NaN == NaN; integers, bools and strings exactly; kinds, types and shapes
// must match). On mismatch, *why says where.
bool Matches(const NxValue* actual, const NxValue* expected, double rtol, double atol, std::string* why);

}  // namespace nxrt::cli
