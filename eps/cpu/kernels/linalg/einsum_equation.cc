#include "kernels/linalg/einsum_equation.h"

#include <algorithm>
#include <nxrt/nxrt_ep.hpp>

#include "common/broadcast.h"

namespace nxrt::cpu::linalg {
namespace {

EinsumTerm ParseTerm(const std::string& s, const std::string& op, const std::string& equation) {
  EinsumTerm term;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') {
      term.letters.push_back(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      term.letters.push_back(26 + (c - 'a'));
    } else if (c == '.' && s.compare(i, 3, "...") == 0 && term.ellipsis_at < 0) {
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 2;
    } else {
      ep::Fail(NX_INVALID_ARGUMENT, op + ": malformed einsum equation '" + equation + "'");
    }
  }
  return term;
}

}  // namespace

EinsumEquation ParseEinsumEquation(const std::string& equation, const std::string& op) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ' && c != '\t') eq += c;
  }
  EinsumEquation out;
  size_t arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  out.explicit_output = arrow != std::string::npos;
  if (out.explicit_output) out.output = ParseTerm(eq.substr(arrow + 2), op, equation);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    out.inputs.push_back(ParseTerm(lhs.substr(start, comma - start), op, equation));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

EinsumShapes ResolveEinsum(const EinsumEquation& eq,
                           const std::vector<std::span<const int64_t>>& shapes,
                           const std::string& op) {
  NXRT_EP_ENFORCE(eq.inputs.size() == shapes.size(),
                  op + ": the equation has " + std::to_string(eq.inputs.size()) +
                      " operands but the node has " + std::to_string(shapes.size()) + " inputs");
  EinsumShapes r;
  // Ellipsis ranks, right-aligned across operands as in broadcasting.
  int max_ell = 0;
  std::vector<int> ell(shapes.size(), 0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const EinsumTerm& t = eq.inputs[i];
    const int rank = static_cast<int>(shapes[i].size());
    const int letters = static_cast<int>(t.letters.size());
    if (t.ellipsis_at < 0) {
      NXRT_EP_ENFORCE(rank == letters, op + ": operand " + std::to_string(i) + " has rank " +
                                           std::to_string(rank) + " but the equation gives it " +
                                           std::to_string(letters) + " labels");
    } else {
      NXRT_EP_ENFORCE(rank >= letters, op + ": operand " + std::to_string(i) + " has rank " +
                                           std::to_string(rank) + ", fewer than its " +
                                           std::to_string(letters) + " labels");
      ell[i] = rank - letters;
      max_ell = std::max(max_ell, ell[i]);
    }
  }
  r.label_size.assign(kEllipsisLabel + max_ell, -1);
  std::vector<int> count(kEllipsisLabel, 0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const EinsumTerm& t = eq.inputs[i];
    std::vector<int> labels;
    for (int j = 0; j <= static_cast<int>(t.letters.size()); ++j) {
      if (j == t.ellipsis_at) {
        for (int e = 0; e < ell[i]; ++e) labels.push_back(kEllipsisLabel + (max_ell - ell[i]) + e);
      }
      if (j < static_cast<int>(t.letters.size())) {
        labels.push_back(t.letters[j]);
        ++count[t.letters[j]];
      }
    }
    for (size_t a = 0; a < labels.size(); ++a) {
      int64_t& size = r.label_size[labels[a]];
      const int64_t d = shapes[i][a];
      if (size < 0 || size == 1) {
        size = d;  // first sighting, or a broadcast extent of 1 being widened
      } else {
        NXRT_EP_ENFORCE(d == size || d == 1, op + ": label extents disagree (" +
                                                 std::to_string(size) + " vs " + std::to_string(d) +
                                                 ") in operand " + std::to_string(i) + " " +
                                                 ShapeToString(shapes[i]));
      }
    }
    r.input_labels.push_back(std::move(labels));
  }
  if (eq.explicit_output) {
    const EinsumTerm& t = eq.output;
    for (int j = 0; j <= static_cast<int>(t.letters.size()); ++j) {
      if (j == t.ellipsis_at) {
        for (int e = 0; e < max_ell; ++e) r.output_labels.push_back(kEllipsisLabel + e);
      }
      if (j < static_cast<int>(t.letters.size())) {
        const int l = t.letters[j];
        NXRT_EP_ENFORCE(count[l] > 0, op + ": output label '" +
                                          std::string(1, char(l < 26 ? 'A' + l : 'a' + l - 26)) +
                                          "' does not appear in any operand");
        NXRT_EP_ENFORCE(std::count(t.letters.begin(), t.letters.end(), l) == 1,
                        op + ": an output label appears twice");
        r.output_labels.push_back(l);
      }
    }
  } else {
    for (int e = 0; e < max_ell; ++e) r.output_labels.push_back(kEllipsisLabel + e);
    for (int l = 0; l < kEllipsisLabel; ++l) {
      if (count[l] == 1) r.output_labels.push_back(l);
    }
  }
  return r;
}

}  // namespace nxrt::cpu::linalg
