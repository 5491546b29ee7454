// ai.onnx.ml element mappers: LabelEncoder (1, 2, 4), Binarizer (1), ArrayFeatureExtractor (1).
#include <cmath>
#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/reduction/reduction_kernels.h"

namespace nxrt::cpu::reduction {
namespace {

constexpr const char* kMlDomain = "ai.onnx.ml";

// ---- LabelEncoder -----------------------------------------------------------------------------

// A typed list of keys or values: strings, or numbers kept as int64 (integers) / double (floats).
struct Column {
  NxElementType type = NX_TYPE_UNDEFINED;
  std::vector<std::string> s;
  std::vector<int64_t> i;
  std::vector<double> f;

  size_t size() const {
    return type == NX_TYPE_STRING ? s.size() : IsFloat() ? f.size() : i.size();
  }
  bool IsFloat() const { return type == NX_TYPE_FLOAT || type == NX_TYPE_DOUBLE; }
};

Column ColumnFromTensor(const ep::ConstTensor& t) {
  Column c;
  c.type = t.type();
  const size_t n = t.size();
  switch (c.type) {
    case NX_TYPE_STRING:
      for (size_t k = 0; k < n; ++k) c.s.emplace_back(t.string(k));
      break;
    case NX_TYPE_FLOAT:
      c.f.assign(t.data<float>(), t.data<float>() + n);
      break;
    case NX_TYPE_DOUBLE:
      c.f.assign(t.data<double>(), t.data<double>() + n);
      break;
    case NX_TYPE_INT64:
      c.i.assign(t.data<int64_t>(), t.data<int64_t>() + n);
      break;
    case NX_TYPE_INT32:
      c.i.assign(t.data<int32_t>(), t.data<int32_t>() + n);
      break;
    case NX_TYPE_INT16:
      c.i.assign(t.data<int16_t>(), t.data<int16_t>() + n);
      break;
    default:
      ep::Fail(NX_INVALID_ARGUMENT,
               std::string("LabelEncoder: unsupported tensor attribute type ") +
                   ep::ElementTypeName(c.type));
  }
  return c;
}

// keys_* / values_* from the attributes named with `prefix` ("keys" or "values").
Column ReadColumn(const ep::KernelInfo& info, const std::string& prefix) {
  if (auto t = info.attr_tensor((prefix + "_tensor").c_str())) return ColumnFromTensor(*t);
  Column c;
  if (info.has_attr((prefix + "_strings").c_str())) {
    c.type = NX_TYPE_STRING;
    c.s = info.attr_strings((prefix + "_strings").c_str());
  } else if (info.has_attr((prefix + "_int64s").c_str())) {
    c.type = NX_TYPE_INT64;
    c.i = info.attr_ints((prefix + "_int64s").c_str());
  } else if (info.has_attr((prefix + "_floats").c_str())) {
    c.type = NX_TYPE_FLOAT;
    for (float v : info.attr_floats((prefix + "_floats").c_str())) c.f.push_back(v);
  } else {
    ep::Fail(NX_INVALID_MODEL, "LabelEncoder: no " + prefix + "_* attribute");
  }
  return c;
}

class LabelEncoder : public ep::Kernel {
 public:
  explicit LabelEncoder(const ep::KernelInfo& info) {
    if (info.opset() < 2) {
      // Opset 1: classes_strings; strings map to their index, integers to the class name.
      keys_.type = NX_TYPE_STRING;
      keys_.s = info.attr_strings("classes_strings");
      values_.type = NX_TYPE_INT64;
      for (size_t k = 0; k < keys_.s.size(); ++k) values_.i.push_back(static_cast<int64_t>(k));
      classes_ = keys_.s;
      default_.type = NX_TYPE_INT64;
      default_.i = {info.attr_int("default_int64", -1)};
      default_string_ = info.attr_string("default_string", "_Unused");
    } else {
      keys_ = ReadColumn(info, "keys");
      values_ = ReadColumn(info, "values");
      NXRT_EP_ENFORCE(keys_.size() == values_.size(),
                      "LabelEncoder: keys and values must have the same length");
      default_.type = values_.type;
      if (auto t = info.attr_tensor("default_tensor")) {
        default_ = ColumnFromTensor(*t);
        NXRT_EP_ENFORCE(default_.size() == 1, "LabelEncoder: default_tensor must hold one value");
      } else if (values_.type == NX_TYPE_STRING) {
        default_.s = {info.attr_string("default_string", "_Unused")};
      } else if (values_.IsFloat()) {
        default_.f = {info.attr_float("default_float", -0.0f)};
      } else {
        default_.i = {info.attr_int("default_int64", -1)};
      }
    }
    // Later keys take precedence over repeated earlier ones.
    for (size_t k = 0; k < keys_.size(); ++k) {
      if (keys_.type == NX_TYPE_STRING) {
        string_index_[keys_.s[k]] = k;
      } else if (keys_.IsFloat()) {
        if (std::isnan(keys_.f[k])) {
          nan_index_ = static_cast<int64_t>(k);
        } else {
          float_index_[keys_.f[k]] = k;
        }
      } else {
        int_index_[keys_.i[k]] = k;
      }
    }
    legacy_ = info.opset() < 2;
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const NxElementType in = x.type();
    if (legacy_ && in != NX_TYPE_STRING) {  // opset 1, integer -> class name
      ep::Tensor y = ctx.output(0, x.shape(), NX_TYPE_STRING);
      for (size_t k = 0; k < x.size(); ++k) {
        const int64_t v = in == NX_TYPE_INT64 ? x.data<int64_t>()[k] : x.data<int32_t>()[k];
        y.set_string(
            k, v >= 0 && v < static_cast<int64_t>(classes_.size()) ? classes_[v] : default_string_);
      }
      return;
    }
    const bool in_string = in == NX_TYPE_STRING;
    const bool in_float = in == NX_TYPE_FLOAT || in == NX_TYPE_DOUBLE;
    NXRT_EP_ENFORCE(in_string == (keys_.type == NX_TYPE_STRING) && in_float == keys_.IsFloat(),
                    std::string("LabelEncoder: input type ") + ep::ElementTypeName(in) +
                        " does not match the keys' type " + ep::ElementTypeName(keys_.type));
    const NxElementType out = values_.type;
    ep::Tensor y = ctx.output(0, x.shape(), out);
    for (size_t k = 0; k < x.size(); ++k) {
      const int64_t at = Find(x, k);
      const Column& src = at < 0 ? default_ : values_;
      const size_t j = at < 0 ? 0 : static_cast<size_t>(at);
      switch (out) {
        case NX_TYPE_STRING:
          y.set_string(k, src.s[j]);
          break;
        case NX_TYPE_FLOAT:
          y.data<float>()[k] = static_cast<float>(src.f[j]);
          break;
        case NX_TYPE_DOUBLE:
          y.data<double>()[k] = src.f[j];
          break;
        case NX_TYPE_INT64:
          y.data<int64_t>()[k] = src.i[j];
          break;
        case NX_TYPE_INT32:
          y.data<int32_t>()[k] = static_cast<int32_t>(src.i[j]);
          break;
        case NX_TYPE_INT16:
          y.data<int16_t>()[k] = static_cast<int16_t>(src.i[j]);
          break;
        default:
          ep::Fail(NX_INVALID_ARGUMENT, "LabelEncoder: unsupported value type");
      }
    }
  }

 private:
  // Index of the key matching element k of x, or -1.
  int64_t Find(const ep::ConstTensor& x, size_t k) const {
    switch (x.type()) {
      case NX_TYPE_STRING: {
        auto it = string_index_.find(std::string(x.string(k)));
        return it == string_index_.end() ? -1 : static_cast<int64_t>(it->second);
      }
      case NX_TYPE_FLOAT:
      case NX_TYPE_DOUBLE: {
        const double v = x.type() == NX_TYPE_FLOAT ? x.data<float>()[k] : x.data<double>()[k];
        if (std::isnan(v)) return nan_index_;
        auto it = float_index_.find(v);
        return it == float_index_.end() ? -1 : static_cast<int64_t>(it->second);
      }
      default: {
        int64_t v;
        switch (x.type()) {
          case NX_TYPE_INT64:
            v = x.data<int64_t>()[k];
            break;
          case NX_TYPE_INT32:
            v = x.data<int32_t>()[k];
            break;
          case NX_TYPE_INT16:
            v = x.data<int16_t>()[k];
            break;
          default:
            ep::Fail(NX_INVALID_ARGUMENT, "LabelEncoder: unsupported input type");
        }
        auto it = int_index_.find(v);
        return it == int_index_.end() ? -1 : static_cast<int64_t>(it->second);
      }
    }
  }

  Column keys_, values_, default_;
  bool legacy_ = false;
  std::vector<std::string> classes_;
  std::string default_string_;
  std::unordered_map<std::string, size_t> string_index_;
  std::unordered_map<int64_t, size_t> int_index_;
  std::unordered_map<double, size_t> float_index_;
  int64_t nan_index_ = -1;
};

// ---- Binarizer --------------------------------------------------------------------------------

class Binarizer : public ep::Kernel {
 public:
  explicit Binarizer(const ep::KernelInfo& info) : threshold_(info.attr_float("threshold", 0.0f)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::Tensor y = ctx.output(0, x.shape(), x.type());
    switch (x.type()) {
      case NX_TYPE_FLOAT:
        Run<float>(x, y);
        break;
      case NX_TYPE_DOUBLE:
        Run<double>(x, y);
        break;
      case NX_TYPE_INT64:
        Run<int64_t>(x, y);
        break;
      case NX_TYPE_INT32:
        Run<int32_t>(x, y);
        break;
      default:
        ep::Fail(NX_INVALID_ARGUMENT,
                 std::string("Binarizer: unsupported type ") + ep::ElementTypeName(x.type()));
    }
  }

 private:
  template <class T>
  void Run(const ep::ConstTensor& x, const ep::Tensor& y) const {
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const double t = threshold_;
    for (size_t i = 0; i < x.size(); ++i) out[i] = static_cast<double>(in[i]) > t ? T(1) : T(0);
  }
  float threshold_;
};

// ---- ArrayFeatureExtractor --------------------------------------------------------------------

// Selects entries of the last axis: X [..., C], indices (any shape, flattened) -> [..., K];
// a 1-D X gives [1, K].
class ArrayFeatureExtractor : public ep::Kernel {
 public:
  explicit ArrayFeatureExtractor(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0), idx = ctx.input(1);
    const auto shape = x.shape();
    NXRT_EP_ENFORCE(!shape.empty(), "ArrayFeatureExtractor: input must have rank >= 1");
    NXRT_EP_ENFORCE(idx.type() == NX_TYPE_INT64, "ArrayFeatureExtractor: indices must be int64");
    const int64_t c = shape.back();
    const int64_t k = static_cast<int64_t>(idx.size());
    const int64_t* ix = idx.data<int64_t>();
    for (int64_t j = 0; j < k; ++j) {
      NXRT_EP_ENFORCE(ix[j] >= 0 && ix[j] < c,
                      "ArrayFeatureExtractor: index " + std::to_string(ix[j]) +
                          " is out of range for last dimension " + std::to_string(c));
    }
    std::vector<int64_t> out_shape(shape.begin(), shape.end() - 1);
    if (out_shape.empty()) out_shape.push_back(1);
    out_shape.push_back(k);
    ep::Tensor y = ctx.output(0, out_shape, x.type());
    const int64_t rows = c == 0 ? 0 : static_cast<int64_t>(x.size()) / c;
    auto gather = [&]<class T>() {
      const T* in = x.data<T>();
      T* out = y.data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < k; ++j) out[r * k + j] = in[r * c + ix[j]];
      }
    };
    switch (x.type()) {
      case NX_TYPE_FLOAT:
        gather.template operator()<float>();
        break;
      case NX_TYPE_DOUBLE:
        gather.template operator()<double>();
        break;
      case NX_TYPE_INT64:
        gather.template operator()<int64_t>();
        break;
      case NX_TYPE_INT32:
        gather.template operator()<int32_t>();
        break;
      case NX_TYPE_STRING:
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < k; ++j) y.set_string(r * k + j, x.string(r * c + ix[j]));
        }
        break;
      default:
        ep::Fail(NX_INVALID_ARGUMENT, std::string("ArrayFeatureExtractor: unsupported type ") +
                                          ep::ElementTypeName(x.type()));
    }
  }
};

}  // namespace

void RegisterMlOps(NxKernelRegistry* r) {
  const std::vector<NxElementType> label_types = {NX_TYPE_STRING, NX_TYPE_INT64, NX_TYPE_FLOAT,
                                                  NX_TYPE_INT32,  NX_TYPE_INT16, NX_TYPE_DOUBLE};
  ep::KernelDefBuilder("LabelEncoder", kMlDomain)
      .Versions(1)
      .Constraint("T1", label_types, {0})
      .Build<LabelEncoder>(r);
  ep::KernelDefBuilder("Binarizer", kMlDomain)
      .Versions(1)
      .Constraint("T", {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_INT64, NX_TYPE_INT32}, {0}, {0})
      .Build<Binarizer>(r);
  ep::KernelDefBuilder("ArrayFeatureExtractor", kMlDomain)
      .Versions(1)
      .Constraint("T",
                  {NX_TYPE_FLOAT, NX_TYPE_DOUBLE, NX_TYPE_INT64, NX_TYPE_INT32, NX_TYPE_STRING},
                  {0}, {0})
      .Build<ArrayFeatureExtractor>(r);
}

}  // namespace nxrt::cpu::reduction
