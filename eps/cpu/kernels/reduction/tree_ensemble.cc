// ai.onnx.ml TreeEnsemble (opset 5): every tree of the ensemble sends each row of X [N, F] to one
// leaf, whose weight goes to its target; per target the weights are summed, averaged, or the
// minimum / maximum taken, then post_transform applies (none, softmax, logistic, softmax with
// zeros kept, probit). The trees are flattened once at kernel creation into arrays of nodes
// whose branches point either to another node or to a leaf.
#include <algorithm>
#include <cmath>
#include <limits>
#include <nxrt/nxrt_ep.hpp>
#include <vector>

#include "kernels/elementwise/half_arrays.h"
#include "kernels/reduction/reduction_kernels.h"

namespace nxrt::cpu::reduction {
namespace {

enum Mode : uint8_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kMember };
enum Aggregate { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };
enum PostTransform { kNone = 0, kSoftmax = 1, kLogistic = 2, kSoftmaxZero = 3, kProbit = 4 };

// A branch target: a node index, or a leaf index with the top bit set.
constexpr uint32_t kLeafBit = 0x80000000u;

struct TreeNode {
  int64_t feature = 0;
  double split = 0;
  Mode mode = kLeq;
  bool missing_true = false;
  uint32_t if_true = 0, if_false = 0;
  std::vector<double> members;  // kMember: the set, sorted
};

std::vector<double> TensorAsDoubles(const ep::ConstTensor& t, const char* what) {
  std::vector<double> out(t.size());
  switch (t.type()) {
    case NX_TYPE_FLOAT:
      for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<float>()[i];
      break;
    case NX_TYPE_DOUBLE:
      for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<double>()[i];
      break;
    case NX_TYPE_FLOAT16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(t.data<Half>()[i]);
      break;
    default:
      throw ep::Error(NX_INVALID_ARGUMENT,
                      std::string("TreeEnsemble: ") + what + " must be a float tensor");
  }
  return out;
}

// Inverse of the standard normal CDF (for PROBIT), by Acklam's rational approximation refined
// with one Newton step on erfc.
double Probit(double p) {
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                             -2.759285104469687e+02, 1.383577518672690e+02,
                             -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                             -1.556989798598866e+02, 6.680131188771972e+01,
                             -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                             -2.400758277161838e+00, -2.549732539343734e+00,
                             4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                             2.445134137142996e+00, 3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

class TreeEnsemble : public ep::Kernel {
 public:
  explicit TreeEnsemble(const ep::KernelInfo& info) {
    n_targets_ = info.attr_int("n_targets");
    aggregate_ = static_cast<int>(info.attr_int("aggregate_function", kSum));
    post_ = static_cast<int>(info.attr_int("post_transform", kNone));
    NXRT_EP_ENFORCE(n_targets_ > 0, "TreeEnsemble: n_targets must be positive");
    NXRT_EP_ENFORCE(aggregate_ >= kAverage && aggregate_ <= kMax,
                    "TreeEnsemble: aggregate_function must be 0 to 3");
    NXRT_EP_ENFORCE(post_ >= kNone && post_ <= kProbit,
                    "TreeEnsemble: post_transform must be 0 to 4");
    const std::vector<int64_t> features = info.attr_ints("nodes_featureids");
    const std::vector<int64_t> true_ids = info.attr_ints("nodes_truenodeids");
    const std::vector<int64_t> false_ids = info.attr_ints("nodes_falsenodeids");
    const std::vector<int64_t> true_leafs = info.attr_ints("nodes_trueleafs");
    const std::vector<int64_t> false_leafs = info.attr_ints("nodes_falseleafs");
    const std::vector<int64_t> missing = info.attr_ints("nodes_missing_value_tracks_true");
    const std::vector<int64_t> roots = info.attr_ints("tree_roots");
    targets_ = info.attr_ints("leaf_targetids");
    std::optional<ep::ConstTensor> splits = info.attr_tensor("nodes_splits");
    std::optional<ep::ConstTensor> modes = info.attr_tensor("nodes_modes");
    std::optional<ep::ConstTensor> weights = info.attr_tensor("leaf_weights");
    std::optional<ep::ConstTensor> members = info.attr_tensor("membership_values");
    NXRT_EP_ENFORCE(splits && modes && weights,
                    "TreeEnsemble: nodes_splits, nodes_modes and leaf_weights are required");
    NXRT_EP_ENFORCE(modes->type() == NX_TYPE_UINT8, "TreeEnsemble: nodes_modes must be uint8");
    const size_t n = features.size();
    NXRT_EP_ENFORCE(true_ids.size() == n && false_ids.size() == n && true_leafs.size() == n &&
                        false_leafs.size() == n && splits->size() == n && modes->size() == n &&
                        (missing.empty() || missing.size() == n),
                    "TreeEnsemble: the nodes_* attributes must all have one entry per node");
    weights_ = TensorAsDoubles(*weights, "leaf_weights");
    NXRT_EP_ENFORCE(targets_.size() == weights_.size(),
                    "TreeEnsemble: leaf_targetids and leaf_weights must have the same length");
    for (int64_t t : targets_)
      NXRT_EP_ENFORCE(t >= 0 && t < n_targets_, "TreeEnsemble: a leaf target is out of range");
    const std::vector<double> split_values = TensorAsDoubles(*splits, "nodes_splits");
    std::vector<double> member_values;
    if (members) member_values = TensorAsDoubles(*members, "membership_values");
    size_t next_member = 0;

    const auto target = [&](int64_t id, int64_t leaf) -> uint32_t {
      if (leaf) {
        NXRT_EP_ENFORCE(id >= 0 && static_cast<size_t>(id) < weights_.size(),
                        "TreeEnsemble: a branch names a leaf out of range");
        return static_cast<uint32_t>(id) | kLeafBit;
      }
      NXRT_EP_ENFORCE(id >= 0 && static_cast<size_t>(id) < n,
                      "TreeEnsemble: a branch names a node out of range");
      return static_cast<uint32_t>(id);
    };
    nodes_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      TreeNode& node = nodes_[i];
      node.feature = features[i];
      NXRT_EP_ENFORCE(node.feature >= 0, "TreeEnsemble: a feature id is negative");
      node.split = split_values[i];
      const uint8_t mode = modes->data<uint8_t>()[i];
      NXRT_EP_ENFORCE(mode <= kMember, "TreeEnsemble: a node mode is not 0 to 6");
      node.mode = static_cast<Mode>(mode);
      node.missing_true = !missing.empty() && missing[i] != 0;
      node.if_true = target(true_ids[i], true_leafs[i]);
      node.if_false = target(false_ids[i], false_leafs[i]);
      if (node.mode == kMember) {
        // Sets follow each other in node order, each ended by a NaN.
        while (next_member < member_values.size() && !std::isnan(member_values[next_member]))
          node.members.push_back(member_values[next_member++]);
        NXRT_EP_ENFORCE(next_member < member_values.size() || !node.members.empty(),
                        "TreeEnsemble: membership_values has no set for a BRANCH_MEMBER node");
        ++next_member;  // the NaN
        std::sort(node.members.begin(), node.members.end());
      }
      max_feature_ = std::max(max_feature_, node.feature);
    }
    for (int64_t r : roots) {
      NXRT_EP_ENFORCE(r >= 0 && static_cast<size_t>(r) < n, "TreeEnsemble: a tree root is out of range");
      const TreeNode& node = nodes_[static_cast<size_t>(r)];
      // A tree that is one leaf: a root whose branches are the same leaf.
      roots_.push_back(node.if_true == node.if_false && (node.if_true & kLeafBit)
                           ? node.if_true
                           : static_cast<uint32_t>(r));
    }
    NXRT_EP_ENFORCE(!roots_.empty(), "TreeEnsemble: tree_roots is empty");
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    NXRT_EP_ENFORCE(x.rank() == 2 || x.rank() == 1, "TreeEnsemble: X must be [N, F]");
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t cols = x.rank() == 2 ? x.dim(1) : x.dim(0);
    NXRT_EP_ENFORCE(max_feature_ < cols, "TreeEnsemble: a node reads feature " +
                                             std::to_string(max_feature_) + " but X has " +
                                             std::to_string(cols));
    const std::vector<double> features = TensorAsDoubles(x, "X");
    std::vector<double> scores(static_cast<size_t>(rows * n_targets_));
    for (int64_t r = 0; r < rows; ++r) Predict(features.data() + r * cols, scores.data() + r * n_targets_);
    ep::Tensor y = ctx.output(0, {rows, n_targets_}, x.type());
    for (size_t i = 0; i < scores.size(); ++i) {
      switch (x.type()) {
        case NX_TYPE_FLOAT:
          y.data<float>()[i] = static_cast<float>(scores[i]);
          break;
        case NX_TYPE_DOUBLE:
          y.data<double>()[i] = scores[i];
          break;
        default:
          y.data<Half>()[i] = Half(static_cast<float>(scores[i]));
      }
    }
  }

 private:
  bool Goes(const TreeNode& node, double v) const {
    if (std::isnan(v) && node.missing_true) return true;
    switch (node.mode) {
      case kLeq:
        return v <= node.split;
      case kLt:
        return v < node.split;
      case kGte:
        return v >= node.split;
      case kGt:
        return v > node.split;
      case kEq:
        return v == node.split;
      case kNeq:
        return v != node.split;
      default:
        return std::binary_search(node.members.begin(), node.members.end(), v);
    }
  }

  // The leaf one tree sends a row to. Depth is bounded by the node count (a cycle is an error).
  uint32_t Leaf(uint32_t at, const double* row) const {
    for (size_t steps = 0; !(at & kLeafBit); ++steps) {
      NXRT_EP_ENFORCE(steps <= nodes_.size(), "TreeEnsemble: the trees contain a cycle");
      const TreeNode& node = nodes_[at];
      at = Goes(node, row[node.feature]) ? node.if_true : node.if_false;
    }
    return at & ~kLeafBit;
  }

  void Predict(const double* row, double* out) const {
    const double init = aggregate_ == kMin   ? std::numeric_limits<double>::max()
                        : aggregate_ == kMax ? std::numeric_limits<double>::lowest()
                                             : 0.0;
    std::fill(out, out + n_targets_, init);
    std::vector<bool> touched(static_cast<size_t>(n_targets_), false);
    for (uint32_t root : roots_) {
      const uint32_t leaf = Leaf(root, row);
      const int64_t t = targets_[leaf];
      const double w = weights_[leaf];
      touched[t] = true;
      switch (aggregate_) {
        case kMin:
          out[t] = std::min(out[t], w);
          break;
        case kMax:
          out[t] = std::max(out[t], w);
          break;
        default:
          out[t] += w;
      }
    }
    if (aggregate_ == kAverage)
      for (int64_t t = 0; t < n_targets_; ++t) out[t] /= static_cast<double>(roots_.size());
    PostTransformRow(out);
  }

  void PostTransformRow(double* v) const {
    switch (post_) {
      case kSoftmax:
      case kSoftmaxZero: {
        // SOFTMAX_ZERO leaves zeros at zero and normalises over the others.
        double top = std::numeric_limits<double>::lowest();
        for (int64_t t = 0; t < n_targets_; ++t)
          if (post_ == kSoftmax || v[t] != 0) top = std::max(top, v[t]);
        double sum = 0;
        for (int64_t t = 0; t < n_targets_; ++t) {
          v[t] = post_ == kSoftmaxZero && v[t] == 0 ? 0 : std::exp(v[t] - top);
          sum += v[t];
        }
        if (sum > 0)
          for (int64_t t = 0; t < n_targets_; ++t) v[t] /= sum;
        break;
      }
      case kLogistic:
        for (int64_t t = 0; t < n_targets_; ++t) v[t] = 1 / (1 + std::exp(-v[t]));
        break;
      case kProbit:
        for (int64_t t = 0; t < n_targets_; ++t) v[t] = Probit(v[t]);
        break;
      default:
        break;
    }
  }

  int64_t n_targets_ = 1;
  int aggregate_ = kSum, post_ = kNone;
  std::vector<TreeNode> nodes_;
  std::vector<uint32_t> roots_;
  std::vector<int64_t> targets_;
  std::vector<double> weights_;
  int64_t max_feature_ = 0;
};

}  // namespace

void RegisterTreeEnsemble(NxKernelRegistry* registry) {
  ep::KernelDefBuilder("TreeEnsemble", "ai.onnx.ml").Versions(5).Build<TreeEnsemble>(registry);
}

}  // namespace nxrt::cpu::reduction
