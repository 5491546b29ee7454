// Cast and CastLike. Numeric conversions live in cast_convert.cc; this file adds the string
// conversions, which follow numpy's astype: numbers print in their shortest round-trip form
// ("0.1", "100.0", "1e-05", "True"), strings parse as decimal / scientific numbers or the
// case-insensitive literals INF, +INF, -INF, NaN.
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/attr_types.h"
#include "kernels/elementwise/cast_convert.h"
#include "kernels/elementwise/elementwise_kernels.h"
#include "kernels/elementwise/ew_common.h"
#include "kernels/elementwise/float_formats.h"

namespace nxrt::cpu::elementwise {
namespace {

// numpy's float repr: shortest round-trip digits, positional for 1e-4 <= |x| < 1e16 (with a
// trailing ".0" for integral values), scientific otherwise ("1e-05", "1.5e+20").
std::string FormatFloat(const char* sci_digits) {
  // sci_digits: "[-]d[.ddd]e[+-]XX" from to_chars / printf in scientific form.
  std::string_view s(sci_digits);
  const bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  const size_t epos = s.find('e');
  const int exp10 = std::atoi(s.data() + epos + 1);
  std::string digits;
  for (char c : s.substr(0, epos)) {
    if (c != '.') digits.push_back(c);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  // Built with appends only (GCC 12 warns falsely about operator+ chains at -O3).
  std::string out;
  if (neg) out.push_back('-');
  if (exp10 >= 0 && exp10 < 16) {
    const size_t int_digits = static_cast<size_t>(exp10) + 1;
    for (size_t i = 0; i < int_digits; ++i) out.push_back(i < digits.size() ? digits[i] : '0');
    out.push_back('.');
    if (digits.size() > int_digits) {
      out.append(digits, int_digits, std::string::npos);
    } else {
      out.push_back('0');
    }
  } else if (exp10 < 0 && exp10 >= -4) {
    out.append("0.");
    out.append(static_cast<size_t>(-exp10 - 1), '0');
    out.append(digits);
  } else {
    out.push_back(digits[0]);
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out.append(eb);
  }
  return out;
}

template <class F>
std::string ShortestFloat(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf) - 1, v, std::chars_format::scientific);
  *res.ptr = '\0';
  return FormatFloat(buf);
}

// Shortest digits that round-trip through a 16-bit float type.
template <class H>
std::string ShortestHalf(H h) {
  float f = static_cast<float>(h);
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  char buf[64];
  for (int prec = 0; prec < 9; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*e", prec, static_cast<double>(f));
    if (H(std::strtof(buf, nullptr)).bits == h.bits) break;
  }
  return FormatFloat(buf);
}

template <class T>
std::string ToString(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_floating_point_v<T>) {
    return ShortestFloat(v);
  } else if constexpr (kIsHalfLike<T>) {
    return ShortestHalf(v);
  } else {
    return std::to_string(v);
  }
}

// Parses one string as a number of the destination kind.
double ParseDouble(std::string_view s, const char* op) {
  std::string str(s);
  char* end = nullptr;
  double v = std::strtod(str.c_str(), &end);
  if (end == str.c_str()) {
    ep::Fail(NX_INVALID_ARGUMENT,
             std::string(op) + ": cannot convert string '" + str + "' to a number");
  }
  return v;
}

class CastKernel : public ep::Kernel {
 public:
  explicit CastKernel(const ep::KernelInfo& info)
      : like_(info.op_type() == "CastLike"),
        saturate_(info.attr_int("saturate", 1) != 0),
        round_(RoundMode(info)) {
    if (!like_) to_ = TargetType(info);
  }

  void Compute(ep::KernelContext& ctx) override {
    const char* op = like_ ? "CastLike" : "Cast";
    ep::ConstTensor x = ctx.input(0);
    const NxElementType to = like_ ? ctx.input(1).type() : to_;
    const NxElementType from = x.type();
    ep::Tensor y = ctx.output(0, x.shape(), to);
    const int64_t n = static_cast<int64_t>(x.size());
    if (n == 0) return;
    if (from == NX_TYPE_STRING && to == NX_TYPE_STRING) {
      for (int64_t i = 0; i < n; ++i) y.set_string(i, x.string(i));
    } else if (to == NX_TYPE_STRING) {
      ToStrings(x, y, n);
    } else if (from == NX_TYPE_STRING) {
      FromStrings(x, y, to, n, op);
    } else {
      ConvertArray(x.raw(), from, y.mutable_raw(), to, n, saturate_, ctx.threads(), round_);
    }
  }

 private:
  // How a value becomes FLOAT8E8M0 (opset 24 on): "up" (the default), "down" or "nearest".
  static E8M0Round RoundMode(const ep::KernelInfo& info) {
    const std::string mode = info.attr_string("round_mode", "up");
    if (mode == "up") return E8M0Round::kUp;
    if (mode == "down") return E8M0Round::kDown;
    if (mode == "nearest") return E8M0Round::kNearest;
    ep::Fail(NX_INVALID_MODEL, info.describe() + ": round_mode is '" + mode +
                                   "'; it must be 'up', 'down' or 'nearest'");
  }

  // "to" is an int (TensorProto.DataType) from opset 6 on; Cast-1 spelled it as a string.
  static NxElementType TargetType(const ep::KernelInfo& info) {
    const NxAttribute* a = info.attr("to");
    if (a == nullptr) ep::Fail(NX_INVALID_MODEL, info.describe() + ": missing attribute 'to'");
    if (ep::Host().Attribute_GetType(a) != NX_ATTR_STRING) {
      return AttrElementType(info, "to");
    }
    std::string name = info.attr_string("to", "");
    for (int t = NX_TYPE_FLOAT; t <= NX_TYPE_INT2; ++t) {
      std::string candidate = ep::ElementTypeName(static_cast<NxElementType>(t));
      std::string upper;
      for (char c : candidate)
        upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (upper == name) return static_cast<NxElementType>(t);
    }
    ep::Fail(NX_INVALID_MODEL, info.describe() + ": unknown target type '" + name + "'");
  }

  void ToStrings(const ep::ConstTensor& x, const ep::Tensor& y, int64_t n) const {
    const NxElementType from = x.type();
    auto emit = [&]<class T>(const T* p) {
      for (int64_t i = 0; i < n; ++i) y.set_string(i, ToString(p[i]));
    };
    switch (from) {
      case NX_TYPE_FLOAT:
        return emit(x.data<float>());
      case NX_TYPE_DOUBLE:
        return emit(x.data<double>());
      case NX_TYPE_FLOAT16:
        return emit(x.data<Half>());
      case NX_TYPE_BFLOAT16:
        return emit(x.data<BFloat16>());
      case NX_TYPE_INT8:
        return emit(x.data<int8_t>());
      case NX_TYPE_INT16:
        return emit(x.data<int16_t>());
      case NX_TYPE_INT32:
        return emit(x.data<int32_t>());
      case NX_TYPE_INT64:
        return emit(x.data<int64_t>());
      case NX_TYPE_UINT8:
        return emit(x.data<uint8_t>());
      case NX_TYPE_UINT16:
        return emit(x.data<uint16_t>());
      case NX_TYPE_UINT32:
        return emit(x.data<uint32_t>());
      case NX_TYPE_UINT64:
        return emit(x.data<uint64_t>());
      case NX_TYPE_BOOL:
        return emit(x.data<bool>());
      default: {
        // float8 / float4 / int4 / int2: widen first.
        const bool integer = from == NX_TYPE_INT4 || from == NX_TYPE_UINT4 ||
                             from == NX_TYPE_INT2 || from == NX_TYPE_UINT2;
        const NxElementType mid = integer ? NX_TYPE_INT64 : NX_TYPE_FLOAT;
        std::vector<int64_t> buf(n);  // 8 bytes per element covers both float and int64
        ConvertArray(x.raw(), from, buf.data(), mid, n, true, 1);
        if (mid == NX_TYPE_INT64) return emit(buf.data());
        return emit(reinterpret_cast<const float*>(buf.data()));
      }
    }
  }

  void FromStrings(const ep::ConstTensor& x, const ep::Tensor& y, NxElementType to, int64_t n,
                   const char* op) const {
    if (to == NX_TYPE_FLOAT) {
      // Parse straight to float: going through double could round twice.
      float* out = y.data<float>();
      for (int64_t i = 0; i < n; ++i) {
        std::string s(x.string(i));
        char* end = nullptr;
        out[i] = std::strtof(s.c_str(), &end);
        if (end == s.c_str()) {
          ep::Fail(NX_INVALID_ARGUMENT,
                   std::string(op) + ": cannot convert string '" + s + "' to a number");
        }
      }
      return;
    }
    const bool integral = to == NX_TYPE_INT8 || to == NX_TYPE_INT16 || to == NX_TYPE_INT32 ||
                          to == NX_TYPE_INT64 || to == NX_TYPE_UINT8 || to == NX_TYPE_UINT16 ||
                          to == NX_TYPE_UINT32 || to == NX_TYPE_UINT64 || to == NX_TYPE_INT4 ||
                          to == NX_TYPE_UINT4 || to == NX_TYPE_INT2 || to == NX_TYPE_UINT2;
    if (to == NX_TYPE_BOOL) {
      bool* out = y.data<bool>();
      for (int64_t i = 0; i < n; ++i) {
        std::string_view s = x.string(i);
        if (s == "True" || s == "true") {
          out[i] = true;
        } else if (s == "False" || s == "false" || s.empty()) {
          out[i] = false;
        } else {
          out[i] = ParseDouble(s, op) != 0.0;
        }
      }
      return;
    }
    if (integral) {
      // Integers parse exactly (64-bit); other text goes through double and truncates.
      std::vector<int64_t> tmp(n);
      bool is_unsigned64 = to == NX_TYPE_UINT64;
      for (int64_t i = 0; i < n; ++i) {
        std::string s(x.string(i));
        const char* b = s.c_str();
        char* end = nullptr;
        errno = 0;
        int64_t v = is_unsigned64 ? static_cast<int64_t>(std::strtoull(b, &end, 10))
                                  : static_cast<int64_t>(std::strtoll(b, &end, 10));
        if (end == b || *end != '\0' || errno == ERANGE)
          v = SaturatingFloatToInt<int64_t>(ParseDouble(s, op));  // "nan", "1e300": no UB
        tmp[i] = v;
      }
      ConvertArray(tmp.data(), is_unsigned64 ? NX_TYPE_UINT64 : NX_TYPE_INT64, y.mutable_raw(), to,
                   n, saturate_, 1, round_);
      return;
    }
    std::vector<double> tmp(n);
    for (int64_t i = 0; i < n; ++i) tmp[i] = ParseDouble(x.string(i), op);
    ConvertArray(tmp.data(), NX_TYPE_DOUBLE, y.mutable_raw(), to, n, saturate_, 1, round_);
  }

  bool like_;
  bool saturate_;
  E8M0Round round_;
  NxElementType to_ = NX_TYPE_UNDEFINED;
};

}  // namespace

void RegisterCastKernels(NxKernelRegistry* r) {
  TypeList all = Concat(NumericTypes(),
                        {NX_TYPE_BOOL, NX_TYPE_STRING, NX_TYPE_FLOAT8E4M3FN, NX_TYPE_FLOAT8E4M3FNUZ,
                         NX_TYPE_FLOAT8E5M2, NX_TYPE_FLOAT8E5M2FNUZ, NX_TYPE_INT4, NX_TYPE_UINT4,
                         NX_TYPE_FLOAT4E2M1, NX_TYPE_FLOAT8E8M0, NX_TYPE_INT2, NX_TYPE_UINT2});
  ep::KernelDefBuilder("Cast")
      .Versions(1)
      .Constraint("T1", all, {0})
      .Constraint("T2", all, {}, {0})
      .Build<CastKernel>(r);
  ep::KernelDefBuilder("CastLike")
      .Versions(15)
      .Constraint("T1", all, {0})
      .Constraint("T2", all, {1}, {0})
      .Build<CastKernel>(r);
}

}  // namespace nxrt::cpu::elementwise
