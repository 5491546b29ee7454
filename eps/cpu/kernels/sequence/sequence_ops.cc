// The sequence operators that only rearrange tensors: SequenceEmpty, SequenceConstruct,
// SequenceInsert, SequenceAt, SequenceErase and SequenceLength. None of them touches tensor data:
// the output sequence shares the input tensors (the host never copies them and nobody writes
// them), so they work for every element type and cost O(length) whatever the tensor sizes.
#include <string>
#include <vector>

#include "common/attr_types.h"
#include "kernels/sequence/sequence_kernels.h"
#include "kernels/sequence/sequence_util.h"

namespace nxrt::cpu::sequence {
namespace {

// Input 0 as a sequence, with the op's name in the error.
ep::ValueView SequenceInput(const ep::KernelContext& ctx, const char* op) {
  ep::ValueView v = ctx.input_value(0);
  if (!v.valid() || !v.is_sequence()) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": input 0 must be a sequence, got " +
                                      (v.valid() ? ep::ValueKindName(v.kind()) : "nothing"));
  }
  return v;
}

class SequenceEmpty : public ep::Kernel {
 public:
  explicit SequenceEmpty(const ep::KernelInfo& info)
      : dtype_(AttrElementType(info, "dtype", NX_TYPE_FLOAT)) {
    NXRT_EP_ENFORCE(std::string(ep::ElementTypeName(dtype_)) != "undefined",
                    "SequenceEmpty: unknown dtype " + std::to_string(static_cast<int>(dtype_)));
  }
  void Compute(ep::KernelContext& ctx) override { ctx.SetOutputSequence(0, dtype_, {}); }

 private:
  NxElementType dtype_;
};

class SequenceConstruct : public ep::Kernel {
 public:
  explicit SequenceConstruct(const ep::KernelInfo& info) : declared_(info.output_type(0)) {}
  void Compute(ep::KernelContext& ctx) override {
    std::vector<const NxValue*> elements;
    NxElementType type = declared_;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      ep::ConstTensor t = ctx.input(i);
      if (type == NX_TYPE_UNDEFINED) type = t.type();
      NXRT_EP_ENFORCE(t.type() == type, "SequenceConstruct: input " + std::to_string(i) + " is " +
                                            ep::ElementTypeName(t.type()) + ", expected " +
                                            ep::ElementTypeName(type));
      elements.push_back(t.handle());
    }
    ctx.SetOutputSequence(0, type, elements);
  }

 private:
  NxElementType declared_;
};

class SequenceInsert : public ep::Kernel {
 public:
  explicit SequenceInsert(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ValueView seq = SequenceInput(ctx, "SequenceInsert");
    ep::ConstTensor tensor = ctx.input(1);
    NxElementType type = seq.type();
    if (type == NX_TYPE_UNDEFINED) type = tensor.type();
    NXRT_EP_ENFORCE(tensor.type() == type, std::string("SequenceInsert: cannot insert a ") +
                                               ep::ElementTypeName(tensor.type()) +
                                               " tensor into a sequence of " +
                                               ep::ElementTypeName(type));
    std::vector<const NxValue*> elements = seq.elements();
    size_t at = elements.size();  // default: append
    if (auto p = ctx.optional_input(2)) {
      at = NormalizePosition(ReadPosition(*p, "SequenceInsert"), elements.size(), true,
                             "SequenceInsert");
    }
    elements.insert(elements.begin() + static_cast<std::ptrdiff_t>(at), tensor.handle());
    ctx.SetOutputSequence(0, type, elements);
  }
};

class SequenceAt : public ep::Kernel {
 public:
  explicit SequenceAt(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ValueView seq = SequenceInput(ctx, "SequenceAt");
    const size_t at = NormalizePosition(ReadPosition(ctx.input(1), "SequenceAt"),
                                        seq.sequence_length(), false, "SequenceAt");
    ctx.SetOutputValue(0, seq.element(at).handle());
  }
};

class SequenceErase : public ep::Kernel {
 public:
  explicit SequenceErase(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ValueView seq = SequenceInput(ctx, "SequenceErase");
    std::vector<const NxValue*> elements = seq.elements();
    int64_t pos = -1;  // default: the last element
    if (auto p = ctx.optional_input(1)) pos = ReadPosition(*p, "SequenceErase");
    const size_t at = NormalizePosition(pos, elements.size(), false, "SequenceErase");
    elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(at));
    ctx.SetOutputSequence(0, seq.type(), elements);
  }
};

class SequenceLength : public ep::Kernel {
 public:
  explicit SequenceLength(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ValueView seq = SequenceInput(ctx, "SequenceLength");
    ep::Tensor out = ctx.output(0, {}, NX_TYPE_INT64);
    *out.data<int64_t>() = static_cast<int64_t>(seq.sequence_length());
  }
};

}  // namespace

void RegisterSequenceOps(NxKernelRegistry* r) {
  // Element types are not constrained: the tensors are only shared, never read.
  const std::vector<NxElementType> index_types = {NX_TYPE_INT32, NX_TYPE_INT64};
  ep::KernelDefBuilder("SequenceEmpty")
      .Versions(11)
      .ValueKinds(NX_KIND_SEQUENCE)
      .Build<SequenceEmpty>(r);
  ep::KernelDefBuilder("SequenceConstruct")
      .Versions(11)
      .ValueKinds(NX_KIND_SEQUENCE)
      .Build<SequenceConstruct>(r);
  ep::KernelDefBuilder("SequenceInsert")
      .Versions(11)
      .ValueKinds(NX_KIND_SEQUENCE)
      .Constraint("I", index_types, {2})
      .Build<SequenceInsert>(r);
  ep::KernelDefBuilder("SequenceAt")
      .Versions(11)
      .ValueKinds(NX_KIND_SEQUENCE)
      .Constraint("I", index_types, {1})
      .Build<SequenceAt>(r);
  ep::KernelDefBuilder("SequenceErase")
      .Versions(11)
      .ValueKinds(NX_KIND_SEQUENCE)
      .Constraint("I", index_types, {1})
      .Build<SequenceErase>(r);
  ep::KernelDefBuilder("SequenceLength")
      .Versions(11)
      .ValueKinds(NX_KIND_SEQUENCE)
      .Build<SequenceLength>(r);
}

}  // namespace nxrt::cpu::sequence
