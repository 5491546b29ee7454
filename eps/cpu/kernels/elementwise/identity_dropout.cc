// Identity (tensor copy, any element type) and Dropout (inference: copy with an all-true mask;
// training_mode = true: random mask scaled by 1 / (1 - ratio)).
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "kernels/elementwise/elementwise_kernels.h"
#include "kernels/elementwise/ew_common.h"
#include "kernels/elementwise/float_formats.h"

namespace nxrt::cpu::elementwise {
namespace {

// Copies tensor x into y (same type and element count).
void CopyTensor(const ep::ConstTensor& x, const ep::Tensor& y, int threads) {
  const NxElementType t = x.type();
  const int64_t n = static_cast<int64_t>(x.size());
  if (t == NX_TYPE_STRING) {
    for (int64_t i = 0; i < n; ++i) y.set_string(static_cast<size_t>(i), x.string(i));
    return;
  }
  const size_t es = ElementSize(t);
  if (es == 0 && !IsSubByte(t)) UnsupportedType("Identity", t);
  const int64_t bytes = StorageBytes(t, n, es);
  if (bytes == 0) return;
  const uint8_t* src = static_cast<const uint8_t*>(x.raw());
  uint8_t* dst = static_cast<uint8_t*>(y.mutable_raw());
  if (src == dst) return;  // the host handed the input's buffer out as the output (Alias)
  ParallelFor(ThreadsFor(threads, bytes / 4), bytes, 4 * kGrain, [&](int64_t b, int64_t e) {
    std::memcpy(dst + b, src + b, static_cast<size_t>(e - b));
  });
}

class Identity : public ep::Kernel {
 public:
  explicit Identity(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ValueView v = ctx.input_value(0);
    if (v.kind() != NX_VALUE_TENSOR) {
      // A sequence or optional (opsets 14 / 16): its tensors are immutable and shared, so the
      // output can be the input itself.
      ctx.SetOutputValue(0, v.handle());
      return;
    }
    ep::ConstTensor x(v.handle());
    ep::Tensor y = ctx.output(0, x.shape(), x.type());
    CopyTensor(x, y, ctx.threads());
  }
};

class Dropout : public ep::Kernel {
 public:
  explicit Dropout(const ep::KernelInfo& info)
      : opset_(info.opset()),
        ratio_attr_(info.attr_float("ratio", 0.5f)),
        seed_(info.has_attr("seed") ? static_cast<uint64_t>(info.attr_int("seed"))
                                    : std::random_device{}()) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const NxElementType type = x.type();
    ep::Tensor y = ctx.output(0, x.shape(), type);
    const int64_t n = static_cast<int64_t>(x.size());
    float ratio = ratio_attr_;
    bool training = false;
    if (opset_ >= 12) {
      if (auto r = ctx.optional_input(1)) ratio = ScalarAsFloat(*r, "ratio");
      if (auto t = ctx.optional_input(2)) {
        NXRT_EP_ENFORCE(t->type() == NX_TYPE_BOOL && t->size() == 1,
                        "Dropout: training_mode must be a bool scalar");
        training = t->data<bool>()[0];
      }
    }
    NXRT_EP_ENFORCE(ratio >= 0.0f && ratio < 1.0f,
                    "Dropout: ratio must be in [0, 1), got " + std::to_string(ratio));
    // Before opset 12 there is no training_mode input: an inference runtime always infers
    // (opsets 1-6 also had is_test, which only mattered for training frameworks).
    const bool want_mask = ctx.output_count() > 1;
    // Mask element type: bool from opset 10, the data type before.
    const NxElementType mask_type = opset_ >= 10 ? NX_TYPE_BOOL : type;
    ep::Tensor mask;
    if (want_mask) mask = ctx.output(1, x.shape(), mask_type);
    if (n == 0) return;

    if (!training || ratio == 0.0f) {
      CopyTensor(x, y, ctx.threads());
      if (want_mask) FillMaskTrue(mask, mask_type, n);
      return;
    }
    // Training mode: keep each element with probability 1 - ratio, scaled to keep the mean.
    // The uniform numbers come from MT19937 turned into doubles the way numpy's RandomState
    // does (53 bits from two draws), so a given seed drops the same elements as the ONNX
    // reference implementation.
    std::mt19937 rng(static_cast<uint32_t>(seed_));
    const float scale = 1.0f / (1.0f - ratio);
    std::vector<uint8_t> keep(n);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t hi = rng() >> 5, lo = rng() >> 6;
      const double u = (hi * 67108864.0 + lo) / 9007199254740992.0;
      keep[i] = u >= static_cast<double>(ratio);
    }
    DispatchFloat(type, [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        py[i] = keep[i] ? As<T>(As<float>(px[i]) * scale) : As<T>(0.0f);
      }
      if (want_mask) {
        if (mask_type == NX_TYPE_BOOL) {
          std::memcpy(mask.data<uint8_t>(), keep.data(), n);
        } else {
          T* pm = mask.data<T>();
          for (int64_t i = 0; i < n; ++i) pm[i] = As<T>(keep[i] ? 1.0f : 0.0f);
        }
      }
    });
  }

 private:
  static float ScalarAsFloat(const ep::ConstTensor& t, const char* what) {
    NXRT_EP_ENFORCE(t.size() == 1, std::string("Dropout: ") + what + " must be a scalar");
    float v = 0;
    DispatchFloat(t.type(), [&]<class T>() { v = As<float>(t.data<T>()[0]); });
    return v;
  }

  static void FillMaskTrue(const ep::Tensor& mask, NxElementType t, int64_t n) {
    if (t == NX_TYPE_BOOL) {
      std::memset(mask.data<uint8_t>(), 1, static_cast<size_t>(n));
      return;
    }
    DispatchFloat(t, [&]<class T>() {
      T* p = mask.data<T>();
      for (int64_t i = 0; i < n; ++i) p[i] = As<T>(1.0f);
    });
  }

  int opset_;
  float ratio_attr_;
  uint64_t seed_;
};

}  // namespace

void RegisterIdentityDropoutKernels(NxKernelRegistry* r) {
  TypeList all =
      Concat(NumericTypes(), {NX_TYPE_BOOL, NX_TYPE_STRING, NX_TYPE_COMPLEX64, NX_TYPE_COMPLEX128,
                              NX_TYPE_FLOAT8E4M3FN, NX_TYPE_FLOAT8E4M3FNUZ, NX_TYPE_FLOAT8E5M2,
                              NX_TYPE_FLOAT8E5M2FNUZ, NX_TYPE_INT4, NX_TYPE_UINT4,
                              NX_TYPE_FLOAT4E2M1, NX_TYPE_FLOAT8E8M0, NX_TYPE_INT2, NX_TYPE_UINT2});
  // Tensors from opset 1 (first, so tensor nodes always find this definition); sequences from
  // opset 14 and optionals from opset 16, when ONNX added them to Identity.
  // Alias(0, 0): the host may give the output the input's buffer, and then there is no copy.
  ep::KernelDefBuilder("Identity")
      .Versions(1)
      .Constraint("V", all, {0}, {0})
      .Alias(0, 0)
      .Build<Identity>(r);
  ep::KernelDefBuilder("Identity")
      .Versions(14, 15)
      .ValueKinds(NX_KIND_SEQUENCE)
      .Constraint("V", all, {0}, {0})
      .Build<Identity>(r);
  ep::KernelDefBuilder("Identity")
      .Versions(16)
      .ValueKinds(NX_KIND_SEQUENCE | NX_KIND_OPTIONAL)
      .Constraint("V", all, {0}, {0})
      .Build<Identity>(r);
  ep::KernelDefBuilder("Dropout")
      .Versions(1)
      .Constraint("T", FloatTypes(), {0}, {0})
      .Build<Dropout>(r);
}

}  // namespace nxrt::cpu::elementwise
