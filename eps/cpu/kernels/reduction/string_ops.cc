// String kernels: StringNormalizer (10), StringConcat (20), StringSplit (20), RegexFullMatch (20).
#include <algorithm>
#include <cstdint>
#include <locale>
#include <nxrt/nxrt_ep.hpp>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "kernels/reduction/reduction_kernels.h"

namespace nxrt::cpu::reduction {
namespace {

// ---- UTF-8 case mapping -----------------------------------------------------------------------

// Decodes UTF-8 into code points; invalid bytes are kept as themselves (Latin-1 reading) so the
// round trip never loses data.
std::u32string DecodeUtf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; ok && k < len; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      ok = (d & 0xc0) == 0x80;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (!ok) {
      out.push_back(c);
      ++i;
    } else {
      out.push_back(cp);
      i += len;
    }
  }
  return out;
}

std::string EncodeUtf8(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  return out;
}

// Case conversion through the C++ wide ctype facet of a UTF-8 locale (the node's `locale`
// attribute if installed, else C.UTF-8, else plain ASCII).
class CaseMapper {
 public:
  explicit CaseMapper(const std::string& locale_name) {
    for (const std::string& name : {locale_name + ".UTF-8", locale_name, std::string("C.UTF-8")}) {
      if (name.empty() || name == ".UTF-8") continue;
      try {
        locale_ = std::locale(name.c_str());
        facet_ = &std::use_facet<std::ctype<wchar_t>>(locale_);
        return;
      } catch (const std::exception&) {
      }
    }
  }
  std::string Apply(std::string_view s, bool upper) const {
    bool ascii = true;
    for (char c : s) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (ascii || facet_ == nullptr) {
      std::string out(s);
      for (char& c : out) {
        if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
        if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      }
      return out;
    }
    std::u32string u = DecodeUtf8(s);
    for (char32_t& cp : u) {
      wchar_t w = static_cast<wchar_t>(cp);
      cp = static_cast<char32_t>(upper ? facet_->toupper(w) : facet_->tolower(w));
    }
    return EncodeUtf8(u);
  }

 private:
  std::locale locale_;
  const std::ctype<wchar_t>* facet_ = nullptr;
};

// ---- StringNormalizer -------------------------------------------------------------------------

// Drops stop words (whole elements; case-insensitively unless is_case_sensitive) and changes case.
// Input [C] or [1, C]; if every element is dropped the output holds one empty string.
class StringNormalizer : public ep::Kernel {
 public:
  explicit StringNormalizer(const ep::KernelInfo& info)
      : case_sensitive_(info.attr_int("is_case_sensitive", 0) != 0),
        mapper_(info.attr_string("locale", "en_US")) {
    const std::string action = info.attr_string("case_change_action", "NONE");
    if (action == "LOWER") {
      action_ = kLower;
    } else if (action == "UPPER") {
      action_ = kUpper;
    } else {
      NXRT_EP_ENFORCE(action == "NONE",
                      "StringNormalizer: unknown case_change_action '" + action + "'");
    }
    for (const std::string& w : info.attr_strings("stopwords")) {
      stopwords_.insert(case_sensitive_ ? w : mapper_.Apply(w, false));
    }
  }

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const auto shape = x.shape();
    NXRT_EP_ENFORCE(shape.size() == 1 || (shape.size() == 2 && shape[0] == 1),
                    "StringNormalizer: input must have shape [C] or [1, C], got rank " +
                        std::to_string(shape.size()));
    std::vector<std::string> kept;
    for (size_t i = 0; i < x.size(); ++i) {
      std::string_view s = x.string(i);
      if (!stopwords_.empty()) {
        const std::string key = case_sensitive_ ? std::string(s) : mapper_.Apply(s, false);
        if (stopwords_.count(key)) continue;
      }
      kept.push_back(action_ == kNone ? std::string(s) : mapper_.Apply(s, action_ == kUpper));
    }
    if (kept.empty()) kept.emplace_back();
    const int64_t c = static_cast<int64_t>(kept.size());
    ep::Tensor y = shape.size() == 1 ? ctx.output(0, {c}, NX_TYPE_STRING)
                                     : ctx.output(0, {1, c}, NX_TYPE_STRING);
    for (size_t i = 0; i < kept.size(); ++i) y.set_string(i, kept[i]);
  }

 private:
  enum Action { kNone, kLower, kUpper };
  bool case_sensitive_;
  CaseMapper mapper_;
  Action action_ = kNone;
  std::unordered_set<std::string> stopwords_;
};

// ---- StringConcat -----------------------------------------------------------------------------

class StringConcat : public ep::Kernel {
 public:
  explicit StringConcat(const ep::KernelInfo&) {}
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor a = ctx.input(0), b = ctx.input(1);
    // Numpy broadcasting: align from the right; strides are 0 along broadcast dimensions.
    const auto as = a.shape(), bs = b.shape();
    const size_t rank = std::max(as.size(), bs.size());
    std::vector<int64_t> shape(rank), sa(rank), sb(rank);
    int64_t stride_a = 1, stride_b = 1;
    for (size_t k = 0; k < rank; ++k) {
      const size_t d = rank - 1 - k;
      const int64_t da = k < as.size() ? as[as.size() - 1 - k] : 1;
      const int64_t db = k < bs.size() ? bs[bs.size() - 1 - k] : 1;
      NXRT_EP_ENFORCE(da == db || da == 1 || db == 1,
                      "StringConcat: inputs cannot be broadcast (dimension " + std::to_string(da) +
                          " vs " + std::to_string(db) + ")");
      shape[d] = da == 1 ? db : da;
      sa[d] = da == 1 ? 0 : stride_a;
      sb[d] = db == 1 ? 0 : stride_b;
      stride_a *= da;
      stride_b *= db;
    }
    ep::Tensor y = ctx.output(0, shape, NX_TYPE_STRING);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<int64_t> idx(shape.size(), 0);
    int64_t ia = 0, ib = 0;
    std::string joined;
    for (int64_t i = 0; i < n; ++i) {
      joined.assign(a.string(ia));
      joined.append(b.string(ib));
      y.set_string(i, joined);
      for (size_t d = shape.size(); d-- > 0;) {  // odometer step
        ia += sa[d];
        ib += sb[d];
        if (++idx[d] < shape[d]) break;
        ia -= sa[d] * shape[d];
        ib -= sb[d] * shape[d];
        idx[d] = 0;
      }
    }
  }
};

// ---- StringSplit ------------------------------------------------------------------------------

// Splits like Python's str.split: with a delimiter, every occurrence separates (empty pieces
// kept); without one (absent or ""), runs of whitespace separate and leading/trailing whitespace
// is dropped. At most `maxsplit` splits when it is given.
std::vector<std::string_view> SplitOne(std::string_view s, const std::string& delim,
                                       int64_t maxsplit) {
  std::vector<std::string_view> parts;
  if (!delim.empty()) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      size_t at = s.find(delim, start);
      if (at == std::string_view::npos) break;
      parts.push_back(s.substr(start, at - start));
      start = at + delim.size();
    }
    parts.push_back(s.substr(start));
    return parts;
  }
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  size_t i = 0;
  while (true) {
    while (i < s.size() && space(s[i])) ++i;
    if (i == s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      // No splits left: the rest, keeping its trailing whitespace (as Python does).
      parts.push_back(s.substr(i));
      break;
    }
    size_t j = i;
    while (j < s.size() && !space(s[j])) ++j;
    parts.push_back(s.substr(i, j - i));
    i = j;
  }
  return parts;
}

class StringSplit : public ep::Kernel {
 public:
  explicit StringSplit(const ep::KernelInfo& info)
      : delimiter_(info.attr_string("delimiter", "")), maxsplit_(info.attr_int("maxsplit", -1)) {}

  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    const size_t n = x.size();
    std::vector<std::vector<std::string_view>> parts(n);
    int64_t widest = 0;
    for (size_t i = 0; i < n; ++i) {
      parts[i] = SplitOne(x.string(i), delimiter_, maxsplit_);
      widest = std::max<int64_t>(widest, static_cast<int64_t>(parts[i].size()));
    }
    std::vector<int64_t> shape = x.shape_vector();
    ep::Tensor counts = ctx.output(1, shape, NX_TYPE_INT64);
    shape.push_back(widest);
    ep::Tensor y = ctx.output(0, shape, NX_TYPE_STRING);
    int64_t* c = counts.data<int64_t>();
    for (size_t i = 0; i < n; ++i) {
      c[i] = static_cast<int64_t>(parts[i].size());
      for (int64_t k = 0; k < widest; ++k) {
        y.set_string(i * widest + k, k < c[i] ? parts[i][k] : std::string_view());
      }
    }
  }

 private:
  std::string delimiter_;
  int64_t maxsplit_;
};

// ---- RegexFullMatch ---------------------------------------------------------------------------

// The pattern is RE2 syntax in the spec; std::regex (ECMAScript) agrees on the common subset.
class RegexFullMatch : public ep::Kernel {
 public:
  explicit RegexFullMatch(const ep::KernelInfo& info) {
    const std::string pattern = info.attr_string("pattern", "");
    try {
      regex_ = std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      ep::Fail(NX_INVALID_ARGUMENT,
               "RegexFullMatch: invalid pattern '" + pattern + "': " + e.what());
    }
  }
  void Compute(ep::KernelContext& ctx) override {
    ep::ConstTensor x = ctx.input(0);
    ep::Tensor y = ctx.output(0, x.shape(), NX_TYPE_BOOL);
    bool* out = y.data<bool>();
    for (size_t i = 0; i < x.size(); ++i) {
      std::string_view s = x.string(i);
      out[i] = std::regex_match(s.begin(), s.end(), regex_);
    }
  }

 private:
  std::regex regex_;
};

}  // namespace

void RegisterStringOps(NxKernelRegistry* r) {
  const std::vector<NxElementType> str = {NX_TYPE_STRING};
  ep::KernelDefBuilder("StringNormalizer")
      .Versions(10)
      .Constraint("T", str, {0}, {0})
      .Build<StringNormalizer>(r);
  ep::KernelDefBuilder("StringConcat")
      .Versions(20)
      .Constraint("T", str, {0, 1}, {0})
      .Build<StringConcat>(r);
  ep::KernelDefBuilder("StringSplit")
      .Versions(20)
      .Constraint("T", str, {0}, {0})
      .Build<StringSplit>(r);
  ep::KernelDefBuilder("RegexFullMatch")
      .Versions(20)
      .Constraint("T", str, {0})
      .Build<RegexFullMatch>(r);
}

}  // namespace nxrt::cpu::reduction
