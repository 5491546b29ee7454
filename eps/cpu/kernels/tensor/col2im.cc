// Col2Im: the inverse of im2col. Input [N, C * prod(block), L] holds, for every sliding-block
// position and every tap of the block, one value; each is added into the image position the tap
// covers (positions that fall into the padding are dropped). Works for any number of spatial
// axes; (batch, channel) planes are independent and run in parallel.
#include <type_traits>

#include "kernels/tensor/tensor_kernels.h"
#include "kernels/tensor/tensor_util.h"

namespace nxrt::cpu::tensor {
namespace {

template <class T>
using ArithOf =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

class Col2Im : public ep::Kernel {
 public:
  explicit Col2Im(const ep::KernelInfo& info)
      : dilations_(info.attr_ints("dilations")),
        pads_(info.attr_ints("pads")),
        strides_(info.attr_ints("strides")) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    std::vector<int64_t> image = ReadInts(ctx.input(1), "Col2Im", "image_shape");
    std::vector<int64_t> block = ReadInts(ctx.input(2), "Col2Im", "block_shape");
    size_t d = image.size();
    NXRT_EP_ENFORCE(d >= 1 && block.size() == d,
                    "Col2Im: image_shape and block_shape must have the same non-zero length");
    std::vector<int64_t> dil = dilations_.empty() ? std::vector<int64_t>(d, 1) : dilations_;
    std::vector<int64_t> str = strides_.empty() ? std::vector<int64_t>(d, 1) : strides_;
    std::vector<int64_t> pads = pads_.empty() ? std::vector<int64_t>(2 * d, 0) : pads_;
    NXRT_EP_ENFORCE(dil.size() == d && str.size() == d && pads.size() == 2 * d,
                    "Col2Im: dilations, strides and pads do not match the number of spatial axes");
    auto xs = x.shape();
    NXRT_EP_ENFORCE(xs.size() == 3, "Col2Im: input must be 3-D [N, C*prod(block), L]");
    int64_t taps = ShapeSize(block);
    NXRT_EP_ENFORCE(taps > 0 && xs[1] % taps == 0, "Col2Im: input dim 1 (" + std::to_string(xs[1]) +
                                                       ") is not divisible by the block size " +
                                                       std::to_string(taps));
    int64_t n = xs[0], c = xs[1] / taps;
    std::vector<int64_t> blocks(d);
    for (size_t i = 0; i < d; ++i) {
      NXRT_EP_ENFORCE(str[i] > 0 && dil[i] > 0 && block[i] > 0 && image[i] > 0,
                      "Col2Im: sizes, strides and dilations must be positive");
      blocks[i] = (image[i] + pads[i] + pads[d + i] - dil[i] * (block[i] - 1) - 1) / str[i] + 1;
      NXRT_EP_ENFORCE(blocks[i] > 0, "Col2Im: no sliding block fits the padded image");
    }
    int64_t positions = ShapeSize(blocks);
    NXRT_EP_ENFORCE(xs[2] == positions, "Col2Im: input dim 2 is " + std::to_string(xs[2]) +
                                            " but the geometry gives " + std::to_string(positions) +
                                            " block positions");
    std::vector<int64_t> out_dims = {n, c};
    out_dims.insert(out_dims.end(), image.begin(), image.end());
    ep::Tensor y = ctx.output(0, out_dims, x.type());
    int64_t plane = ShapeSize(image);
    if (n * c * plane == 0) return;
    std::vector<int64_t> img_strides = StridesOf(image);
    DispatchNumeric(x.type(), [&]<class T>() {
      using A = ArithOf<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      ParallelFor(ctx.threads(), n * c, 1, [&](int64_t b, int64_t e) {
        std::vector<A> acc(plane);
        std::vector<int64_t> tap(d), pos(d);
        for (int64_t p = b; p < e; ++p) {
          std::fill(acc.begin(), acc.end(), A(0));
          const T* col = in + p * taps * positions;
          std::fill(tap.begin(), tap.end(), 0);
          for (int64_t t = 0; t < taps; ++t) {
            std::fill(pos.begin(), pos.end(), 0);
            for (int64_t l = 0; l < positions; ++l) {
              int64_t off = 0;
              bool inside = true;
              for (size_t i = 0; i < d && inside; ++i) {
                int64_t v = pos[i] * str[i] - pads[i] + tap[i] * dil[i];
                inside = v >= 0 && v < image[i];
                off += v * img_strides[i];
              }
              if (inside) acc[off] += A(col[t * positions + l]);
              for (size_t i = d; i-- > 0;) {
                if (++pos[i] < blocks[i]) break;
                pos[i] = 0;
              }
            }
            for (size_t i = d; i-- > 0;) {
              if (++tap[i] < block[i]) break;
              tap[i] = 0;
            }
          }
          T* o = out + p * plane;
          for (int64_t i = 0; i < plane; ++i) o[i] = static_cast<T>(acc[i]);
        }
      });
    });
  }

 private:
  std::vector<int64_t> dilations_, pads_, strides_;
};

}  // namespace

void RegisterCol2Im(NxKernelRegistry* r) {
  ep::KernelDefBuilder("Col2Im")
      .Versions(18)
      .Constraint("T", NumericTypes(), {0}, {0})
      .Build<Col2Im>(r);
}

}  // namespace nxrt::cpu::tensor
