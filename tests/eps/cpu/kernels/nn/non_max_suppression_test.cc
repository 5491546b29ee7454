// NonMaxSuppression (eps/cpu/kernels/nn/non_max_suppression.cc) with thousands of candidates and
// hundreds kept, the shape of torchvision's batched NMS (every class in one call, each class
// shifted to a region of its own), equals a direct scalar reference: the same boxes in the same
// order, for several IoU thresholds, with and without a score threshold and an output limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <nxrt/nxrt.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nxrt::test::MakeNode;

struct Box {
  float y1, x1, y2, x2;
};

// The ONNX definition, one box pair at a time.
std::vector<int64_t> ReferenceNms(const std::vector<float>& boxes, const std::vector<float>& scores,
                                  int64_t max_per_class, float iou_threshold,
                                  float score_threshold) {
  const size_t n = scores.size();
  std::vector<int64_t> order;
  for (size_t i = 0; i < n; ++i)
    if (scores[i] > score_threshold) order.push_back(static_cast<int64_t>(i));
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
  auto box = [&](int64_t i) {
    const float* b = &boxes[static_cast<size_t>(i) * 4];
    return Box{std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]),
               std::max(b[1], b[3])};
  };
  std::vector<int64_t> kept;
  for (int64_t i : order) {
    if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
    const Box a = box(i);
    bool keep = true;
    for (int64_t k : kept) {
      const Box b = box(k);
      const float h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
      const float w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
      if (h <= 0 || w <= 0) continue;
      const float inter = h * w;
      const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
      const float uni = area_a + area_b - inter;
      if (uni > 0 && inter / uni > iou_threshold) {
        keep = false;
        break;
      }
    }
    if (keep) kept.push_back(i);
  }
  return kept;
}

TEST(NonMaxSuppression, ThousandsOfShiftedBoxesEqualTheReference) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const int64_t n = 3000, classes = 40;
  std::vector<float> boxes(static_cast<size_t>(n) * 4), scores(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    // Boxes of one class share a region (offset by class, as torchvision's batched NMS does).
    const float offset = static_cast<float>(i % classes) * 2.0f;
    const float y = unit(rng), x = unit(rng), h = 0.05f + 0.3f * unit(rng),
                w = 0.05f + 0.3f * unit(rng);
    float* b = &boxes[static_cast<size_t>(i) * 4];
    b[0] = offset + y;
    b[1] = offset + x;
    b[2] = offset + y + h;
    b[3] = offset + x + w;
    if (i % 7 == 0) std::swap(b[0], b[2]);                                     // flipped corners
    scores[static_cast<size_t>(i)] = std::round(unit(rng) * 200.0f) / 200.0f;  // many ties
  }
  struct Case {
    float iou, score;
    int64_t max_out;
  };
  for (const Case& c : {Case{0.5f, -1.0f, 100000}, Case{0.2f, 0.3f, 100000}, Case{0.7f, 0.0f, 500},
                        Case{0.0f, -1.0f, 100000}}) {
    SCOPED_TRACE("iou " + std::to_string(c.iou) + ", score " + std::to_string(c.score) + ", max " +
                 std::to_string(c.max_out));
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(11);
    onnx::GraphProto* g = m.mutable_graph();
    g->set_name("nms");
    *g->add_node() = MakeNode("NonMaxSuppression", {"boxes", "scores", "max", "iou", "score"},
                              {"selected"}, "nms");
    auto add_input = [&](const std::string& name, int type, std::vector<int64_t> dims) {
      auto* vi = g->add_input();
      vi->set_name(name);
      auto* t = vi->mutable_type()->mutable_tensor_type();
      t->set_elem_type(type);
      for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    };
    add_input("boxes", onnx::TensorProto::FLOAT, {1, n, 4});
    add_input("scores", onnx::TensorProto::FLOAT, {1, 1, n});
    add_input("max", onnx::TensorProto::INT64, {1});
    add_input("iou", onnx::TensorProto::FLOAT, {1});
    add_input("score", onnx::TensorProto::FLOAT, {1});
    auto* out = g->add_output();
    out->set_name("selected");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
    const std::string bytes = m.SerializeAsString();

    nxrt::Env env(NX_LOG_ERROR);
    nxrt::Session session(env, bytes.data(), bytes.size());
    std::vector<float> iou{c.iou}, score{c.score};
    std::vector<int64_t> max_out{c.max_out};
    const std::vector<int64_t> box_dims{1, n, 4}, score_dims{1, 1, n}, one{1};
    nxrt::Value vb =
        nxrt::Value::WrapTensor(NX_TYPE_FLOAT, box_dims, boxes.data(), boxes.size() * 4);
    nxrt::Value vs =
        nxrt::Value::WrapTensor(NX_TYPE_FLOAT, score_dims, scores.data(), scores.size() * 4);
    nxrt::Value vm = nxrt::Value::WrapTensor(NX_TYPE_INT64, one, max_out.data(), 8);
    nxrt::Value vi = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, one, iou.data(), 4);
    nxrt::Value vt = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, one, score.data(), 4);
    std::vector<nxrt::Value> got =
        session.Run({"boxes", "scores", "max", "iou", "score"}, {&vb, &vs, &vm, &vi, &vt});
    const std::vector<int64_t> want = ReferenceNms(boxes, scores, c.max_out, c.iou, c.score);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].shape(), (std::vector<int64_t>{static_cast<int64_t>(want.size()), 3}));
    EXPECT_GT(want.size(), 100u);  // the vector path with many kept boxes
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[0].data<int64_t>()[i * 3 + 2], want[i]) << "selection " << i;
    }
  }
}

}  // namespace
