// NonMaxSuppression (opsets 10, 11): per batch entry and class, boxes are taken in order of
// falling score (ties: lower box index first) and kept unless they overlap a kept box by more
// than iou_threshold, up to max_output_boxes_per_class; boxes scoring at or below
// score_threshold are never considered.
#include <algorithm>
#include <numeric>

#include "kernels/nn/nn_common.h"

namespace nxrt::cpu::nn {
namespace {

struct Box {
  float y1, x1, y2, x2;  // corners, y1 <= y2 and x1 <= x2
  float area;
};

// center_point_box 0: [y1, x1, y2, x2] as any pair of diagonal corners; 1: [xc, yc, w, h].
Box ReadBox(const float* b, bool center_point) {
  Box box;
  if (center_point) {
    box.x1 = b[0] - b[2] / 2;
    box.x2 = b[0] + b[2] / 2;
    box.y1 = b[1] - b[3] / 2;
    box.y2 = b[1] + b[3] / 2;
  } else {
    box.y1 = std::min(b[0], b[2]);
    box.y2 = std::max(b[0], b[2]);
    box.x1 = std::min(b[1], b[3]);
    box.x2 = std::max(b[1], b[3]);
  }
  box.area = (box.y2 - box.y1) * (box.x2 - box.x1);
  return box;
}

float Iou(const Box& a, const Box& b) {
  const float h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0) return 0.0f;
  const float inter = h * w;
  const float uni = a.area + b.area - inter;
  return uni > 0 ? inter / uni : 0.0f;
}

class NonMaxSuppression : public ep::Kernel {
 public:
  explicit NonMaxSuppression(const ep::KernelInfo& info)
      : center_point_(info.attr_int("center_point_box", 0) != 0) {
    NXRT_EP_ENFORCE(info.attr_int("center_point_box", 0) == 0 ||
                        info.attr_int("center_point_box", 0) == 1,
                    "NonMaxSuppression: center_point_box must be 0 or 1");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor boxes = ctx.input(0), scores = ctx.input(1);
    NXRT_EP_ENFORCE(boxes.type() == NX_TYPE_FLOAT && scores.type() == NX_TYPE_FLOAT,
                    "NonMaxSuppression: boxes and scores must be float");
    NXRT_EP_ENFORCE(boxes.rank() == 3 && boxes.dim(2) == 4,
                    "NonMaxSuppression: boxes must be [batch, boxes, 4]");
    NXRT_EP_ENFORCE(scores.rank() == 3 && scores.dim(0) == boxes.dim(0) &&
                        scores.dim(2) == boxes.dim(1),
                    "NonMaxSuppression: scores must be [batch, classes, boxes] matching boxes");
    const int64_t max_per_class = ScalarOr<int64_t>(ctx, 2, 0);
    const float iou_threshold = ScalarOr<float>(ctx, 3, 0.0f);
    const std::optional<float> score_threshold = OptionalScalar<float>(ctx, 4);
    NXRT_EP_ENFORCE(iou_threshold >= 0 && iou_threshold <= 1,
                    "NonMaxSuppression: iou_threshold must be in [0, 1]");

    const int64_t batches = boxes.dim(0), classes = scores.dim(1), n = boxes.dim(1);
    const float* pb = boxes.data<float>();
    const float* ps = scores.data<float>();
    std::vector<int64_t> selected;  // triples (batch, class, box)
    std::vector<Box> all(static_cast<size_t>(n));
    std::vector<int64_t> order;
    std::vector<int64_t> kept;
    for (int64_t b = 0; b < batches && max_per_class > 0; ++b) {
      for (int64_t i = 0; i < n; ++i) all[i] = ReadBox(pb + (b * n + i) * 4, center_point_);
      for (int64_t c = 0; c < classes; ++c) {
        const float* s = ps + (b * classes + c) * n;
        order.clear();
        for (int64_t i = 0; i < n; ++i)
          if (!score_threshold || s[i] > *score_threshold) order.push_back(i);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t z) { return s[a] > s[z]; });
        kept.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
          bool keep = true;
          for (int64_t k : kept) {
            if (Iou(all[i], all[k]) > iou_threshold) {
              keep = false;
              break;
            }
          }
          if (!keep) continue;
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
    const int64_t count = static_cast<int64_t>(selected.size() / 3);
    ep::Tensor out = ctx.output(0, {count, 3}, NX_TYPE_INT64);
    std::copy(selected.begin(), selected.end(), out.data<int64_t>());
  }

 private:
  template <class T>
  static std::optional<T> OptionalScalar(ep::KernelContext& ctx, size_t i) {
    std::optional<ep::ConstTensor> t = ctx.optional_input(i);
    if (!t || t->size() == 0) return std::nullopt;
    NXRT_EP_ENFORCE(t->size() == 1, "NonMaxSuppression: input " + std::to_string(i) +
                                        " must hold one value");
    if constexpr (std::is_same_v<T, int64_t>) {
      NXRT_EP_ENFORCE(t->type() == NX_TYPE_INT64,
                      "NonMaxSuppression: max_output_boxes_per_class must be int64");
    } else {
      NXRT_EP_ENFORCE(t->type() == NX_TYPE_FLOAT, "NonMaxSuppression: thresholds must be float");
    }
    return t->data<T>()[0];
  }
  template <class T>
  static T ScalarOr(ep::KernelContext& ctx, size_t i, T fallback) {
    return OptionalScalar<T>(ctx, i).value_or(fallback);
  }

  bool center_point_;
};

}  // namespace

void RegisterNonMaxSuppressionKernels(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("NonMaxSuppression").Versions(10).Build<NonMaxSuppression>(registry);
}

}  // namespace nxrt::cpu::nn
