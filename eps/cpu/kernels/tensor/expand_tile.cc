// Expand (broadcast to a shape) and Tile (repeat along each axis). Both are strided copies:
// Expand reads with stride 0 along broadcast axes; Tile views each output axis as
// (repeat, input dim) with the repeat axis reading with stride 0.
#include "kernels/tensor/strided_copy.h"
#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

class Expand : public ep::Kernel {
 public:
  explicit Expand(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    Dims shape = ReadInts(ctx.input(1), "Expand", "shape");
    for (int64_t d : shape)
      NXRT_EP_ENFORCE(d >= 0, "Expand: negative dim in shape " + ShapeToString(shape));
    Dims out_dims = BroadcastShapes(x.shape(), shape);
    ep::Tensor y = ctx.output(0, out_dims, x.type());
    if (ShapeSize(out_dims) == 0) return;
    Dims ss = BroadcastStrides(x.shape(), out_dims);
    DispatchMove(x.type(), [&]<class T>() {
      InView<T> src(x);
      OutView<T> dst(y);
      StridedCopy<T>(src.data(), dst.data(), out_dims, ss, StridesOf(out_dims), ctx.threads());
      dst.Commit();
    });
  }
};

class Tile : public ep::Kernel {
 public:
  explicit Tile(const ep::KernelInfo& info) : legacy_(info.opset() < 6) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    Dims in_dims = Dims(x.shape());
    size_t rank = in_dims.size();
    Dims repeats;
    if (legacy_) {
      // Tile-1: inputs (input, tiles, axis): repeat one axis `tiles` times.
      int64_t tiles = ReadScalarInt(ctx.input(1), "Tile", "tiles");
      int64_t axis = NormalizeAxis(ReadScalarInt(ctx.input(2), "Tile", "axis"),
                                   static_cast<int64_t>(rank), "Tile");
      repeats.assign(rank, 1);
      repeats[axis] = tiles;
    } else {
      repeats = ReadInts(ctx.input(1), "Tile", "repeats");
    }
    NXRT_EP_ENFORCE(repeats.size() == rank, "Tile: repeats " + ShapeToString(repeats) +
                                                " must have one entry per input dim " +
                                                ShapeToString(in_dims));
    Dims out_dims(rank);
    for (size_t k = 0; k < rank; ++k) {
      NXRT_EP_ENFORCE(repeats[k] >= 0, "Tile: negative repeat " + std::to_string(repeats[k]));
      out_dims[k] = in_dims[k] * repeats[k];
    }
    ep::Tensor y = ctx.output(0, out_dims, x.type());
    if (ShapeSize(out_dims) == 0) return;
    Dims in_strides = StridesOf(in_dims), out_strides = StridesOf(out_dims);
    Dims dims, ss, ds;
    for (size_t k = 0; k < rank; ++k) {
      dims.push_back(repeats[k]);
      dims.push_back(in_dims[k]);
      ss.push_back(0);
      ss.push_back(in_strides[k]);
      ds.push_back(in_dims[k] * out_strides[k]);
      ds.push_back(out_strides[k]);
    }
    DispatchMove(x.type(), [&]<class T>() {
      InView<T> src(x);
      OutView<T> dst(y);
      StridedCopy<T>(src.data(), dst.data(), dims, ss, ds, ctx.threads());
      dst.Commit();
    });
  }

 private:
  bool legacy_;
};

}  // namespace

void RegisterExpandTile(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Expand").Versions(8).Build<Expand>(r);
  ep::KernelDefBuilder("Tile").Versions(1).Build<Tile>(r);
}

}  // namespace nxrt::cpu::tensor
