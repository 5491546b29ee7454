// ConcatFromSequence (join a sequence's tensors along an axis, or stack them on a new one) and
// SplitToSequence (cut a tensor into a sequence of pieces along an axis). Both see each tensor as
// `outer` rows (the axes before `axis`) whose piece is one contiguous run, so the work is a row
// copy (CopyRows) per piece.
#include <algorithm>
#include <string>
#include <vector>

#include "common/broadcast.h"
#include "kernels/sequence/sequence_kernels.h"
#include "kernels/sequence/sequence_util.h"

namespace nxrt::cpu::sequence {
namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

// Maps an axis in [-rank, rank) to [0, rank), naming the op otherwise.
int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* op) {
  if (axis < -rank || axis >= rank) {
    ep::Fail(NX_INVALID_ARGUMENT, std::string(op) + ": axis " + std::to_string(axis) +
                                      " is out of range [" + std::to_string(-rank) + ", " +
                                      std::to_string(rank - 1) + "]");
  }
  return axis < 0 ? axis + rank : axis;
}

class ConcatFromSequence : public ep::Kernel {
 public:
  explicit ConcatFromSequence(const ep::KernelInfo& info)
      : axis_(info.attr_int("axis")), new_axis_(info.attr_int("new_axis", 0) != 0) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ValueView seq = ctx.input_value(0);
    const size_t n = seq.sequence_length();
    // The output shape comes from the tensors: an empty sequence has none to give.
    NXRT_EP_ENFORCE(n > 0, "ConcatFromSequence: the input sequence is empty");
    std::vector<ep::ConstTensor> parts;
    for (size_t i = 0; i < n; ++i) parts.push_back(seq.element(i));
    const std::vector<int64_t> first = parts[0].shape_vector();
    const int64_t rank = static_cast<int64_t>(first.size());
    // Stacking inserts an axis, so one more position is valid (numpy.stack).
    const int64_t axis = NormalizeAxis(axis_, new_axis_ ? rank + 1 : rank, "ConcatFromSequence");
    const size_t ax = static_cast<size_t>(axis);

    // Every part must match the first outside the axis (everywhere when stacking).
    std::vector<int64_t> lengths;  // each part's extent along the output axis
    for (const ep::ConstTensor& t : parts) {
      const std::vector<int64_t> dims = t.shape_vector();
      bool same = dims.size() == first.size();
      for (size_t k = 0; same && k < dims.size(); ++k)
        same = dims[k] == first[k] || (!new_axis_ && k == ax);
      NXRT_EP_ENFORCE(
          same, "ConcatFromSequence: tensor shape " + ShapeToString(dims) + " does not match " +
                    ShapeToString(first) +
                    (new_axis_ ? std::string() : " outside axis " + std::to_string(axis)));
      lengths.push_back(new_axis_ ? 1 : dims[ax]);
    }
    std::vector<int64_t> out_dims = first;
    int64_t total = 0;
    for (int64_t len : lengths) total += len;
    if (new_axis_)
      out_dims.insert(out_dims.begin() + axis, total);
    else
      out_dims[ax] = total;

    const NxElementType type = parts[0].type();
    ep::Tensor out = ctx.output(0, out_dims, type);
    // Rows are the axes before `axis`; what follows it (in the parts' own shape) is the inner run.
    const int64_t outer = Product(first, 0, ax);
    const int64_t inner = Product(first, new_axis_ ? ax : ax + 1, first.size());
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t run = lengths[i] * inner;
      CopyRows(parts[i], {0, run}, out, {offset * inner, total * inner}, outer, run);
      offset += lengths[i];
    }
  }

 private:
  int64_t axis_;
  bool new_axis_;
};

class SplitToSequence : public ep::Kernel {
 public:
  explicit SplitToSequence(const ep::KernelInfo& info)
      : axis_(info.attr_int("axis", 0)), keepdims_(info.attr_int("keepdims", 1) != 0) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const std::vector<int64_t> dims = x.shape_vector();
    const int64_t rank = static_cast<int64_t>(dims.size());
    NXRT_EP_ENFORCE(rank > 0, "SplitToSequence: the input must have rank >= 1");
    const size_t ax = static_cast<size_t>(NormalizeAxis(axis_, rank, "SplitToSequence"));
    const int64_t dim = dims[ax];

    std::vector<int64_t> sizes;
    bool drop_axis = false;  // keepdims applies only to the default split of 1
    if (auto s = ctx.optional_input(1)) {
      sizes = SplitSizes(*s, dim);
    } else {
      sizes.assign(static_cast<size_t>(dim), 1);
      drop_axis = !keepdims_;
    }

    const NxElementType type = x.type();
    const int64_t outer = Product(dims, 0, ax);
    const int64_t inner = Product(dims, ax + 1, dims.size());
    std::vector<const NxValue*> pieces;
    int64_t offset = 0;
    for (int64_t len : sizes) {
      std::vector<int64_t> piece_dims = dims;
      if (drop_axis)
        piece_dims.erase(piece_dims.begin() + static_cast<std::ptrdiff_t>(ax));
      else
        piece_dims[ax] = len;
      ep::Tensor piece = ctx.CreateTensor(type, piece_dims);
      const int64_t run = len * inner;
      CopyRows(x, {offset * inner, dim * inner}, piece, {0, run}, outer, run);
      pieces.push_back(piece.handle());
      offset += len;
    }
    ctx.SetOutputSequence(0, type, pieces);
  }

 private:
  // The piece lengths the 'split' input asks for: a scalar is a chunk length (the last chunk
  // takes what is left), a 1-D tensor lists the lengths, which must add up to the axis.
  static std::vector<int64_t> SplitSizes(const ep::ConstTensor& split, int64_t dim) {
    NXRT_EP_ENFORCE(split.type() == NX_TYPE_INT32 || split.type() == NX_TYPE_INT64,
                    std::string("SplitToSequence: 'split' must be int32 or int64, got ") +
                        ep::ElementTypeName(split.type()));
    std::vector<int64_t> values(split.size());
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] =
          split.type() == NX_TYPE_INT32 ? split.data<int32_t>()[i] : split.data<int64_t>()[i];
    }
    std::vector<int64_t> sizes;
    if (split.rank() == 0) {
      const int64_t chunk = values[0];
      NXRT_EP_ENFORCE(chunk > 0,
                      "SplitToSequence: 'split' must be positive, got " + std::to_string(chunk));
      for (int64_t left = dim; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
      return sizes;
    }
    NXRT_EP_ENFORCE(split.rank() == 1,
                    "SplitToSequence: 'split' must be a scalar or 1-D, got rank " +
                        std::to_string(split.rank()));
    int64_t sum = 0;
    for (int64_t v : values) {
      NXRT_EP_ENFORCE(v >= 0, "SplitToSequence: negative split length " + std::to_string(v));
      sum += v;
    }
    NXRT_EP_ENFORCE(sum == dim, "SplitToSequence: split lengths " + ShapeToString(values) +
                                    " add up to " + std::to_string(sum) + ", not the axis size " +
                                    std::to_string(dim));
    return values;
  }

  int64_t axis_;
  bool keepdims_;
};

}  // namespace

void RegisterConcatSplitSequence(NxKernelRegistry* r) {
  const std::vector<NxElementType> types = SliceableTypes();
  ep::KernelDefBuilder("ConcatFromSequence")
      .Versions(11)
      .ValueKinds(NX_KIND_SEQUENCE)
      .Constraint("T", types, {0}, {0})
      .Build<ConcatFromSequence>(r);
  ep::KernelDefBuilder("SplitToSequence")
      .Versions(11)
      .ValueKinds(NX_KIND_SEQUENCE)
      .Constraint("T", types, {0}, {0})
      .Constraint("I", {NX_TYPE_INT32, NX_TYPE_INT64}, {1})
      .Build<SplitToSequence>(r);
}

}  // namespace nxrt::cpu::sequence
