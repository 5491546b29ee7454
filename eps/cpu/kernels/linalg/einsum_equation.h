// Einsum equation parsing and label resolution (which axis of which operand carries which
// label, label extents, the output's labels), independent of the element type.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nxrt::cpu::linalg {

// Labels are small integers: 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51 (so numeric order is ASCII
// order, as implicit-output sorting needs), axes covered by "..." -> 52, 53, ...
constexpr int kEllipsisLabel = 52;

struct EinsumTerm {
  std::vector<int> letters;  // letter labels in written order
  int ellipsis_at = -1;      // index into letters where "..." stands, or -1
};

struct EinsumEquation {
  std::vector<EinsumTerm> inputs;
  EinsumTerm output;
  bool explicit_output = false;
};

// Parses "ij,jk->ik" (spaces ignored); throws naming `op` on malformed input.
EinsumEquation ParseEinsumEquation(const std::string& equation, const std::string& op);

struct EinsumShapes {
  std::vector<std::vector<int>> input_labels;  // one label per axis of each input
  std::vector<int> output_labels;
  std::vector<int64_t> label_size;  // indexed by label
};

// Resolves ellipses against the input ranks, checks extents (size-1 axes broadcast) and
// derives the output labels (sorted single-use letters for implicit output).
EinsumShapes ResolveEinsum(const EinsumEquation& eq,
                           const std::vector<std::span<const int64_t>>& shapes,
                           const std::string& op);

}  // namespace nxrt::cpu::linalg
