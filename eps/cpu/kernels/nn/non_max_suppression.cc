// NonMaxSuppression (opsets 10, 11): per batch entry and class, boxes are taken in order of
// falling score (ties: lower box index first) and kept unless they overlap a kept box by more
// than iou_threshold, up to max_output_boxes_per_class; boxes scoring at or below
// score_threshold are never considered.
//
// Detectors exported from torchvision run one NonMaxSuppression over every class at once, each
// class's boxes shifted to a region of their own: tens of thousands of candidates, thousands kept
// (SSDlite with random weights: 450 ms of its 490). A candidate is tested against the kept boxes
// eight at a time (kept boxes stored as columns), with exactly the scalar formula's operations.
#include <immintrin.h>

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

// The boxes kept so far, as columns padded to whole vectors with boxes that overlap nothing, and
// whether a box overlaps any of them by more than the threshold. Intersection over union, one
// IEEE operation at a time (no fused multiply-add): h = min(y2) - max(y1), w likewise, 0 unless
// both are positive; inter = h * w, union = area_a + area_b - inter, 0 unless positive.
class KeptBoxes {
 public:
  void Clear() {
    count_ = 0;
    for (auto* v : {&y1_, &x1_, &y2_, &x2_, &area_}) v->clear();
  }
  size_t size() const { return count_; }
  void Add(const Box& b) {
    if (count_ == y1_.size()) {
      // Eight boxes from (1, 1) to (0, 0): min(y2, 0) - max(y1, 1) < 0 for any box.
      for (auto* v : {&y1_, &x1_}) v->insert(v->end(), 8, 1.0f);
      for (auto* v : {&y2_, &x2_, &area_}) v->insert(v->end(), 8, 0.0f);
    }
    y1_[count_] = b.y1;
    x1_[count_] = b.x1;
    y2_[count_] = b.y2;
    x2_[count_] = b.x2;
    area_[count_] = b.area;
    ++count_;
  }
  bool Overlaps(const Box& a, float threshold) const {
    const size_t n = y1_.size();  // a multiple of 8
    size_t k = 0;
    const __m256 ay1 = _mm256_set1_ps(a.y1), ax1 = _mm256_set1_ps(a.x1);
    const __m256 ay2 = _mm256_set1_ps(a.y2), ax2 = _mm256_set1_ps(a.x2);
    const __m256 aarea = _mm256_set1_ps(a.area), thr = _mm256_set1_ps(threshold);
    const __m256 zero = _mm256_setzero_ps();
    for (; k + 8 <= n; k += 8) {
      const __m256 h = _mm256_sub_ps(_mm256_min_ps(ay2, _mm256_loadu_ps(&y2_[k])),
                                     _mm256_max_ps(ay1, _mm256_loadu_ps(&y1_[k])));
      const __m256 w = _mm256_sub_ps(_mm256_min_ps(ax2, _mm256_loadu_ps(&x2_[k])),
                                     _mm256_max_ps(ax1, _mm256_loadu_ps(&x1_[k])));
      const __m256 inter = _mm256_mul_ps(h, w);
      const __m256 uni = _mm256_sub_ps(_mm256_add_ps(aarea, _mm256_loadu_ps(&area_[k])), inter);
      // Iou is 0 unless h > 0, w > 0 and the union > 0; 0 never exceeds a threshold >= 0.
      const __m256 valid = _mm256_and_ps(
          _mm256_and_ps(_mm256_cmp_ps(h, zero, _CMP_GT_OQ), _mm256_cmp_ps(w, zero, _CMP_GT_OQ)),
          _mm256_cmp_ps(uni, zero, _CMP_GT_OQ));
      const __m256 over = _mm256_cmp_ps(_mm256_div_ps(inter, uni), thr, _CMP_GT_OQ);
      if (_mm256_movemask_ps(_mm256_and_ps(valid, over)) != 0) return true;
    }
    return false;
  }

 private:
  size_t count_ = 0;
  std::vector<float> y1_, x1_, y2_, x2_, area_;
};

class NonMaxSuppression : public ep::Kernel {
 public:
  explicit NonMaxSuppression(const ep::KernelInfo& info)
      : center_point_(info.attr_int("center_point_box", 0) != 0) {
    NXRT_EP_ENFORCE(
        info.attr_int("center_point_box", 0) == 0 || info.attr_int("center_point_box", 0) == 1,
        "NonMaxSuppression: center_point_box must be 0 or 1");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor boxes = ctx.input(0), scores = ctx.input(1);
    NXRT_EP_ENFORCE(boxes.type() == NX_TYPE_FLOAT && scores.type() == NX_TYPE_FLOAT,
                    "NonMaxSuppression: boxes and scores must be float");
    NXRT_EP_ENFORCE(boxes.rank() == 3 && boxes.dim(2) == 4,
                    "NonMaxSuppression: boxes must be [batch, boxes, 4]");
    NXRT_EP_ENFORCE(
        scores.rank() == 3 && scores.dim(0) == boxes.dim(0) && scores.dim(2) == boxes.dim(1),
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
    KeptBoxes kept;
    for (int64_t b = 0; b < batches && max_per_class > 0; ++b) {
      for (int64_t i = 0; i < n; ++i) all[i] = ReadBox(pb + (b * n + i) * 4, center_point_);
      for (int64_t c = 0; c < classes; ++c) {
        const float* s = ps + (b * classes + c) * n;
        order.clear();
        for (int64_t i = 0; i < n; ++i)
          if (!score_threshold || s[i] > *score_threshold) order.push_back(i);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t z) { return s[a] > s[z]; });
        kept.Clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
          if (kept.Overlaps(all[i], iou_threshold)) continue;
          kept.Add(all[i]);
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
    NXRT_EP_ENFORCE(t->size() == 1,
                    "NonMaxSuppression: input " + std::to_string(i) + " must hold one value");
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
