#include "nxrt/value_format.h"

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

namespace nxrt::cli {
namespace {

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0x1f) bits = sign | 0x7f800000u | (mant << 13);
  else if (exp == 0) {
    float f = static_cast<float>(mant) / 16777216.0f;
    return sign ? -f : f;
  } else bits = sign | ((exp + 112) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float BFloatToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Element i of a numeric tensor as double; false for types it cannot read.
bool ReadAsDouble(const NxValue* v, size_t i, double* out) {
  const void* p = NxValue_GetConstData(v);
  switch (NxValue_GetElementType(v)) {
    case NX_TYPE_FLOAT: *out = static_cast<const float*>(p)[i]; return true;
    case NX_TYPE_DOUBLE: *out = static_cast<const double*>(p)[i]; return true;
    case NX_TYPE_FLOAT16: *out = HalfToFloat(static_cast<const uint16_t*>(p)[i]); return true;
    case NX_TYPE_BFLOAT16: *out = BFloatToFloat(static_cast<const uint16_t*>(p)[i]); return true;
    case NX_TYPE_INT8: *out = static_cast<const int8_t*>(p)[i]; return true;
    case NX_TYPE_INT16: *out = static_cast<const int16_t*>(p)[i]; return true;
    case NX_TYPE_INT32: *out = static_cast<const int32_t*>(p)[i]; return true;
    case NX_TYPE_INT64: *out = static_cast<double>(static_cast<const int64_t*>(p)[i]); return true;
    case NX_TYPE_UINT8: *out = static_cast<const uint8_t*>(p)[i]; return true;
    case NX_TYPE_UINT16: *out = static_cast<const uint16_t*>(p)[i]; return true;
    case NX_TYPE_UINT32: *out = static_cast<const uint32_t*>(p)[i]; return true;
    case NX_TYPE_UINT64: *out = static_cast<double>(static_cast<const uint64_t*>(p)[i]); return true;
    case NX_TYPE_BOOL: *out = static_cast<const uint8_t*>(p)[i] ? 1 : 0; return true;
    default: return false;
  }
}

bool IsFloatType(NxElementType t) {
  return t == NX_TYPE_FLOAT || t == NX_TYPE_DOUBLE || t == NX_TYPE_FLOAT16 || t == NX_TYPE_BFLOAT16 ||
         t == NX_TYPE_COMPLEX64 || t == NX_TYPE_COMPLEX128;
}

size_t ByteSize(NxElementType t, size_t count) {
  switch (t) {
    case NX_TYPE_FLOAT: case NX_TYPE_INT32: case NX_TYPE_UINT32: return 4 * count;
    case NX_TYPE_DOUBLE: case NX_TYPE_INT64: case NX_TYPE_UINT64: case NX_TYPE_COMPLEX64: return 8 * count;
    case NX_TYPE_COMPLEX128: return 16 * count;
    case NX_TYPE_INT16: case NX_TYPE_UINT16: case NX_TYPE_FLOAT16: case NX_TYPE_BFLOAT16: return 2 * count;
    case NX_TYPE_INT4: case NX_TYPE_UINT4: case NX_TYPE_FLOAT4E2M1: return (count + 1) / 2;
    case NX_TYPE_INT2: case NX_TYPE_UINT2: return (count + 3) / 4;
    default: return count;
  }
}

std::string ShapeText(const NxValue* v) {
  const int64_t* dims = nullptr;
  size_t rank = 0;
  NxValue_GetShape(v, &dims, &rank);
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

std::string Describe(const Value& v) {
  switch (v.kind()) {
    case NX_VALUE_SEQUENCE:
      return std::string("sequence<") + Nx_ElementTypeName(v.type()) + ">(" +
             std::to_string(NxValue_GetSequenceLength(v.get())) + ")";
    case NX_VALUE_OPTIONAL: return NxValue_OptionalHasValue(v.get()) ? "optional(value)" : "optional(empty)";
    default: return std::string(Nx_ElementTypeName(v.type())) + ShapeText(v.get());
  }
}

std::string FirstValues(const Value& v, size_t count) {
  if (v.kind() != NX_VALUE_TENSOR) return "";
  std::ostringstream out;
  size_t n = std::min(count, v.size());
  for (size_t i = 0; i < n; ++i) {
    if (i) out << ' ';
    if (v.type() == NX_TYPE_STRING) {
      out << '"' << v.string(i) << '"';
      continue;
    }
    double d = 0;
    if (!ReadAsDouble(v.get(), i, &d)) return "(not printable)";
    out << d;
  }
  if (v.size() > n) out << " ...";
  return out.str();
}

Value RandomTensor(NxElementType type, const std::vector<int64_t>& dims, uint64_t seed) {
  Value v = Value::Tensor(type, dims);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  size_t n = v.size();
  void* p = NxValue_GetData(v.get());
  for (size_t i = 0; i < n; ++i) {
    switch (type) {
      case NX_TYPE_FLOAT: static_cast<float*>(p)[i] = uniform(rng); break;
      case NX_TYPE_DOUBLE: static_cast<double*>(p)[i] = uniform(rng); break;
      case NX_TYPE_INT64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(rng() % 10); break;
      case NX_TYPE_INT32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(rng() % 10); break;
      case NX_TYPE_INT8: case NX_TYPE_UINT8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(rng() % 10); break;
      case NX_TYPE_BOOL: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(rng() & 1); break;
      case NX_TYPE_STRING: v.set_string(i, "nxrt"); break;
      case NX_TYPE_FLOAT16: {
        // uniform in [-1, 1]: build the half from the float's bits (normal range only)
        float f = uniform(rng);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        uint16_t h = static_cast<uint16_t>(((bits >> 16) & 0x8000u) |
                                           (std::fabs(f) < 6.1e-5f ? 0 : (((bits & 0x7fffffffu) - 0x38000000u) >> 13)));
        static_cast<uint16_t*>(p)[i] = h;
        break;
      }
      default: break;  // zeros for the rest
    }
  }
  return v;
}

bool Matches(const NxValue* actual, const NxValue* expected, double rtol, double atol, std::string* why) {
  NxValueKind ka = NxValue_GetKind(actual), ke = NxValue_GetKind(expected);
  if (ka != ke) {
    *why = "value kind differs";
    return false;
  }
  if (ke == NX_VALUE_SEQUENCE) {
    size_t na = NxValue_GetSequenceLength(actual), ne = NxValue_GetSequenceLength(expected);
    if (na != ne) {
      *why = "sequence length " + std::to_string(na) + ", expected " + std::to_string(ne);
      return false;
    }
    for (size_t i = 0; i < ne; ++i) {
      if (!Matches(NxValue_GetSequenceElement(actual, i), NxValue_GetSequenceElement(expected, i), rtol, atol, why)) {
        *why = "sequence element " + std::to_string(i) + ": " + *why;
        return false;
      }
    }
    return true;
  }
  if (ke == NX_VALUE_OPTIONAL) {
    bool ha = NxValue_OptionalHasValue(actual), he = NxValue_OptionalHasValue(expected);
    if (ha != he) {
      *why = he ? "optional is empty, expected a value" : "optional has a value, expected empty";
      return false;
    }
    return !he || Matches(NxValue_GetOptionalValue(actual), NxValue_GetOptionalValue(expected), rtol, atol, why);
  }
  NxElementType ta = NxValue_GetElementType(actual), te = NxValue_GetElementType(expected);
  if (ta != te) {
    *why = std::string("element type ") + Nx_ElementTypeName(ta) + ", expected " + Nx_ElementTypeName(te);
    return false;
  }
  if (ShapeText(actual) != ShapeText(expected)) {
    *why = "shape " + ShapeText(actual) + ", expected " + ShapeText(expected);
    return false;
  }
  size_t n = NxValue_GetElementCount(expected);
  if (te == NX_TYPE_STRING) {
    for (size_t i = 0; i < n; ++i) {
      size_t la = 0, le = 0;
      const char* a = NxValue_GetString(actual, i, &la);
      const char* e = NxValue_GetString(expected, i, &le);
      if (la != le || (le && std::memcmp(a, e, le) != 0)) {
        *why = "string " + std::to_string(i) + " is '" + std::string(a ? a : "", la) + "', expected '" +
               std::string(e ? e : "", le) + "'";
        return false;
      }
    }
    return true;
  }
  if (!IsFloatType(te) || te == NX_TYPE_COMPLEX64 || te == NX_TYPE_COMPLEX128) {
    if (IsFloatType(te)) {
      // complex: compare the float/double parts
      size_t parts = n * 2;
      for (size_t i = 0; i < parts; ++i) {
        double a = te == NX_TYPE_COMPLEX64 ? static_cast<const float*>(NxValue_GetConstData(actual))[i]
                                           : static_cast<const double*>(NxValue_GetConstData(actual))[i];
        double e = te == NX_TYPE_COMPLEX64 ? static_cast<const float*>(NxValue_GetConstData(expected))[i]
                                           : static_cast<const double*>(NxValue_GetConstData(expected))[i];
        if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e)) && !(std::isnan(a) && std::isnan(e))) {
          *why = "complex part " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(e);
          return false;
        }
      }
      return true;
    }
    size_t bytes = ByteSize(te, n);
    const auto* a = static_cast<const uint8_t*>(NxValue_GetConstData(actual));
    const auto* e = static_cast<const uint8_t*>(NxValue_GetConstData(expected));
    if (te == NX_TYPE_BOOL) {
      for (size_t i = 0; i < n; ++i) {
        if ((a[i] != 0) != (e[i] != 0)) {
          *why = "element " + std::to_string(i) + " is " + (a[i] ? "true" : "false") + ", expected " + (e[i] ? "true" : "false");
          return false;
        }
      }
      return true;
    }
    if (bytes && std::memcmp(a, e, bytes) != 0) {
      for (size_t i = 0; i < n; ++i) {
        double da = 0, de = 0;
        if (ReadAsDouble(actual, i, &da) && ReadAsDouble(expected, i, &de) && da != de) {
          *why = "element " + std::to_string(i) + " is " + std::to_string(da) + ", expected " + std::to_string(de);
          return false;
        }
      }
      *why = "bytes differ";
      return false;
    }
    return true;
  }
  size_t bad = 0, first_bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double a = 0, e = 0;
    ReadAsDouble(actual, i, &a);
    ReadAsDouble(expected, i, &e);
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) && std::isnan(a)) continue;
    } else if (std::isinf(e) || std::isinf(a)) {
      if (a == e) continue;
    } else {
      double diff = std::fabs(a - e);
      if (diff <= atol + rtol * std::fabs(e)) continue;
      worst = std::max(worst, diff);
    }
    if (bad++ == 0) first_bad = i;
  }
  if (bad) {
    double a = 0, e = 0;
    ReadAsDouble(actual, first_bad, &a);
    ReadAsDouble(expected, first_bad, &e);
    std::ostringstream s;
    s << bad << " of " << n << " elements differ; first at " << first_bad << ": " << a << " vs expected " << e
      << " (max abs diff " << worst << ")";
    *why = s.str();
    return false;
  }
  return true;
}

}  // namespace nxrt::cli
