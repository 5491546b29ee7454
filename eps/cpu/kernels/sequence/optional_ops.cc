// Optional (wrap a value, or make an empty optional), OptionalHasElement and OptionalGetElement.
// The wrapped tensor or sequence is shared, not copied.
#include <optional>
#include <string>

#include "kernels/sequence/sequence_kernels.h"

namespace nxrt::cpu::sequence {
namespace {

class Optional : public ep::Kernel {
 public:
  explicit Optional(const ep::KernelInfo& info) : type_(info.attr_type("type")) {}
  void Compute(ep::KernelContext& ctx) override {
    // Without an input the host gives the empty optional the node's declared element type.
    ep::ValueView v = ctx.input_value(0);
    if (v.valid() && type_) CheckAgainstAttribute(v);
    ctx.SetOutputOptional(0, v.valid() ? v.handle() : nullptr);
  }

 private:
  // With both an input and a 'type', they must agree (as in the reference implementation): a
  // mismatch means the model's declared types are wrong downstream.
  void CheckAgainstAttribute(const ep::ValueView& v) const {
    const NxValueKind kind = v.kind();
    const NxElementType type = v.type();
    const bool type_ok = type_->element_type == NX_TYPE_UNDEFINED || type == NX_TYPE_UNDEFINED ||
                         type == type_->element_type;
    if (kind != type_->kind || !type_ok) {
      ep::Fail(NX_INVALID_ARGUMENT,
               std::string("Optional: the input is a ") + ep::ValueKindName(kind) + " of " +
                   ep::ElementTypeName(type) + " but the 'type' attribute names a " +
                   ep::ValueKindName(type_->kind) + " of " +
                   ep::ElementTypeName(type_->element_type));
    }
  }

  std::optional<ep::ValueTypeInfo> type_;
};

// Opset 15 takes only optionals; opset 18 also takes a tensor or a sequence (it is a value that
// is there) and lets the input be omitted (no value).
bool PlainValuesAllowed(const ep::KernelInfo& info) { return info.opset() >= 18; }

void CheckPlainValue(const ep::ValueView& v, bool allowed, const char* op) {
  if (!allowed && !v.is_optional()) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + " before opset 18 takes an optional, got a " +
                                      ep::ValueKindName(v.kind()));
  }
}

class OptionalHasElement : public ep::Kernel {
 public:
  explicit OptionalHasElement(const ep::KernelInfo& info) : plain_(PlainValuesAllowed(info)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ValueView v = ctx.input_value(0);
    bool has = false;
    if (v.valid()) {
      CheckPlainValue(v, plain_, "OptionalHasElement");
      has = v.is_optional() ? v.has_value() : true;
    }
    ep::Tensor out = ctx.output(0, {}, NX_TYPE_BOOL);
    *out.data<bool>() = has;
  }

 private:
  bool plain_;
};

class OptionalGetElement : public ep::Kernel {
 public:
  explicit OptionalGetElement(const ep::KernelInfo& info) : plain_(PlainValuesAllowed(info)) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ValueView v = ctx.input_value(0);
    NXRT_EP_ENFORCE(v.valid(), "OptionalGetElement: the input is missing");
    CheckPlainValue(v, plain_, "OptionalGetElement");
    if (!v.is_optional()) {
      ctx.SetOutputValue(0, v.handle());
      return;
    }
    // ONNX leaves this undefined; an error is the only safe answer.
    NXRT_EP_ENFORCE(v.has_value(), "OptionalGetElement: the optional input is empty");
    ctx.SetOutputValue(0, v.optional_value().handle());
  }

 private:
  bool plain_;
};

}  // namespace

void RegisterOptionalOps(NxKernelRegistry* r) {
  // An optional may hold a sequence, and opset 18 lets the accessors take one directly.
  const uint32_t kinds = NX_KIND_OPTIONAL | NX_KIND_SEQUENCE;
  ep::KernelDefBuilder("Optional").Versions(15).ValueKinds(kinds).Build<Optional>(r);
  ep::KernelDefBuilder("OptionalHasElement")
      .Versions(15)
      .ValueKinds(kinds)
      .Build<OptionalHasElement>(r);
  ep::KernelDefBuilder("OptionalGetElement")
      .Versions(15)
      .ValueKinds(kinds)
      .Build<OptionalGetElement>(r);
}

}  // namespace nxrt::cpu::sequence
