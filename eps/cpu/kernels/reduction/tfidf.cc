// TfIdfVectorizer (opset 9): counts pool n-grams (optionally with skips) in each row of tokens
// and weights the counts (TF, IDF or TFIDF). Input [C] or [B, C] of int32/int64/string; output
// float [E] or [B, E] with E = max(ngram_indexes) + 1.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/reduction/reduction_kernels.h"

namespace nxrt::cpu::reduction {
namespace {

class TfIdfVectorizer : public ep::Kernel {
 public:
  explicit TfIdfVectorizer(const ep::KernelInfo& info)
      : min_n_(info.attr_int("min_gram_length")),
        max_n_(info.attr_int("max_gram_length")),
        max_skip_(info.attr_int("max_skip_count")),
        weights_(info.attr_floats("weights")) {
    const std::string mode = info.attr_string("mode", "");
    if (mode == "TF") {
      mode_ = kTf;
    } else if (mode == "IDF") {
      mode_ = kIdf;
    } else if (mode == "TFIDF") {
      mode_ = kTfIdf;
    } else {
      ep::Fail(NX_INVALID_ARGUMENT, "TfIdfVectorizer: unknown mode '" + mode + "'");
    }
    NXRT_EP_ENFORCE(min_n_ >= 1 && max_n_ >= min_n_ && max_skip_ >= 0,
                    "TfIdfVectorizer: need 1 <= min_gram_length <= max_gram_length and "
                    "max_skip_count >= 0");
    const std::vector<int64_t> counts = info.attr_ints("ngram_counts");
    const std::vector<int64_t> indexes = info.attr_ints("ngram_indexes");
    std::vector<int64_t> pool = info.attr_ints("pool_int64s");
    const std::vector<std::string> pool_strings = info.attr_strings("pool_strings");
    if (!pool_strings.empty()) {
      // Strings become token ids; input strings outside the pool map to -1, which matches nothing.
      pool.clear();
      for (const std::string& s : pool_strings) {
        auto it = string_ids_.emplace(s, static_cast<int64_t>(string_ids_.size())).first;
        pool.push_back(it->second);
      }
    }
    for (int64_t i : indexes) {
      // A negative index would count outside the output; INT64_MAX would overflow i + 1.
      NXRT_EP_ENFORCE(
          i >= 0 && i < std::numeric_limits<int64_t>::max(),
          "TfIdfVectorizer: ngram_indexes must be non-negative, got " + std::to_string(i));
      output_size_ = std::max(output_size_, i + 1);
    }
    NXRT_EP_ENFORCE(weights_.empty() || static_cast<int64_t>(weights_.size()) >= output_size_,
                    "TfIdfVectorizer: fewer weights than output entries");
    // The pool holds all 1-grams from counts[0], then 2-grams from counts[1], ...; the k-th n-gram
    // overall gets output slot indexes[k].
    const int64_t total = static_cast<int64_t>(pool.size());
    int64_t ngram_id = 0;
    for (size_t g = 0; g < counts.size(); ++g) {
      const int64_t n = static_cast<int64_t>(g) + 1;
      const int64_t begin = counts[g];
      const int64_t end = g + 1 < counts.size() ? counts[g + 1] : total;
      NXRT_EP_ENFORCE(begin >= 0 && begin <= end && end <= total,
                      "TfIdfVectorizer: ngram_counts do not fit pool");
      for (int64_t at = begin; at + n <= end; at += n, ++ngram_id) {
        NXRT_EP_ENFORCE(ngram_id < static_cast<int64_t>(indexes.size()),
                        "TfIdfVectorizer: fewer ngram_indexes than pool n-grams");
        if (n < min_n_ || n > max_n_) continue;
        // Counts live per distinct output slot that some n-gram uses, not per output entry: the
        // output may be huge (E comes from the model), the pool is only as big as the model.
        auto slot = slots_.emplace(indexes[ngram_id], static_cast<int64_t>(slot_outputs_.size()));
        if (slot.second) slot_outputs_.push_back(indexes[ngram_id]);
        grams_[Key(pool.data() + at, n, 1)] = slot.first->second;
      }
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const auto shape = x.shape();
    NXRT_EP_ENFORCE(shape.size() <= 2, "TfIdfVectorizer: input must have shape [C] or [B, C]");
    const int64_t rows = shape.size() == 2 ? shape[0] : 1;
    const int64_t cols = shape.empty() ? 1 : shape.back();
    std::vector<int64_t> tokens(x.size());
    switch (x.type()) {
      case NX_TYPE_INT64:
        std::copy_n(x.data<int64_t>(), x.size(), tokens.begin());
        break;
      case NX_TYPE_INT32:
        std::copy_n(x.data<int32_t>(), x.size(), tokens.begin());
        break;
      case NX_TYPE_STRING:
        for (size_t i = 0; i < x.size(); ++i) {
          auto it = string_ids_.find(std::string(x.string(i)));
          tokens[i] = it == string_ids_.end() ? -1 : it->second;
        }
        break;
      default:
        ep::Fail(NX_INVALID_ARGUMENT, std::string("TfIdfVectorizer: unsupported input type ") +
                                          ep::ElementTypeName(x.type()));
    }
    ep::Tensor y = shape.size() == 2 ? ctx.output(0, {rows, output_size_}, NX_TYPE_FLOAT)
                                     : ctx.output(0, {output_size_}, NX_TYPE_FLOAT);
    float* out = y.data<float>();
    std::vector<int64_t> freq(slot_outputs_.size());
    for (int64_t r = 0; r < rows; ++r) {
      ctx.ThrowIfShouldStop("TfIdfVectorizer");
      std::fill(freq.begin(), freq.end(), 0);
      Count(tokens.data() + r * cols, cols, freq);
      float* yr = out + r * output_size_;
      // Entries no n-gram maps to have count 0, which is 0 in every mode.
      std::fill(yr, yr + output_size_, 0.0f);
      for (size_t k = 0; k < slot_outputs_.size(); ++k) {
        const int64_t i = slot_outputs_[k];
        const float f = static_cast<float>(freq[k]);
        const float w = weights_.empty() ? 1.0f : weights_[i];
        yr[i] = mode_ == kTf ? f : mode_ == kIdf ? (freq[k] > 0 ? w : 0.0f) : w * f;
      }
    }
  }

 private:
  // n tokens `step` apart, as a byte string usable as a hash key.
  static std::string Key(const int64_t* t, int64_t n, int64_t step) {
    std::string key(static_cast<size_t>(n) * sizeof(int64_t), '\0');
    for (int64_t k = 0; k < n; ++k) {
      std::copy_n(reinterpret_cast<const char*>(t + k * step), sizeof(int64_t),
                  key.data() + k * sizeof(int64_t));
    }
    return key;
  }

  // Skip distance s means tokens s apart (s = 1: adjacent). Unigrams do not depend on the skip,
  // so they are counted on the first pass only.
  void Count(const int64_t* t, int64_t len, std::vector<int64_t>& freq) const {
    // n-grams of n >= 2 with skip distance s need s < len: larger skips count nothing (and a
    // huge max_skip_count must not spin).
    const int64_t last_skip = std::min<int64_t>(max_skip_, std::max<int64_t>(len - 2, 0)) + 1;
    for (int64_t s = 1; s <= last_skip; ++s) {
      const int64_t lo = s == 1 ? min_n_ : std::max<int64_t>(min_n_, 2);
      for (int64_t start = 0; start < len; ++start) {
        for (int64_t n = lo; n <= max_n_ && start + (n - 1) * s < len; ++n) {
          auto it = grams_.find(Key(t + start, n, s));
          if (it != grams_.end()) ++freq[it->second];
        }
      }
    }
  }

  enum Mode { kTf, kIdf, kTfIdf };
  int64_t min_n_, max_n_, max_skip_;
  std::vector<float> weights_;
  Mode mode_ = kTf;
  int64_t output_size_ = 0;
  std::unordered_map<std::string, int64_t> string_ids_;
  std::unordered_map<std::string, int64_t> grams_;  // n-gram -> slot
  std::unordered_map<int64_t, int64_t> slots_;      // output index -> slot
  std::vector<int64_t> slot_outputs_;               // slot -> output index
};

}  // namespace

void RegisterTfIdf(NxKernelRegistry* r) {
  ep::KernelDefBuilder("TfIdfVectorizer")
      .Versions(9)
      .Constraint("T", {NX_TYPE_STRING, NX_TYPE_INT32, NX_TYPE_INT64}, {0})
      .Build<TfIdfVectorizer>(r);
}

}  // namespace nxrt::cpu::reduction
