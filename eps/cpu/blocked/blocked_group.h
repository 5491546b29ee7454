// A blocked group as the compiler needs it, copied out of the graph view that CompileGroup gets
// (the view lives only for that call, and a group whose shapes are known only at run time is
// compiled again for each new set of input shapes): its nodes with their attributes, its values
// with their declared shapes (-1 where unknown), and the constants it reads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nxrt/nxrt_ep.hpp>
#include <span>
#include <string>
#include <vector>

#include "blocked/blocked_ops.h"

namespace nxrt::cpu::blocked {

struct GroupConstant {
  std::vector<int64_t> dims;
  // Borrowed from the graph view while CompileGroup runs (a static group is compiled then and
  // keeps nothing), or `owned` (a group compiled again at run time).
  std::span<const float> data;
  std::vector<float> owned;
  std::vector<int64_t> ints;  // an int64 constant's values (a Resize's sizes), always a copy

  float At(size_t i) const {
    NXRT_EP_ENFORCE(i < data.size(), "blocked group: a constant has too few elements");
    return data[i];
  }
  void Own() {
    if (!owned.empty() || data.empty()) return;
    owned.assign(data.begin(), data.end());
    data = owned;
  }
};

struct GroupValue {
  std::string name;
  std::vector<int64_t> dims;  // declared; -1 where unknown; empty for a constant
  std::shared_ptr<GroupConstant> constant;
  int input = -1, output = -1;  // kernel input / output index
};

struct GroupNode {
  std::string name, op_type;
  int opset = 0;
  BlockedOp op = BlockedOp::kNone;
  std::vector<int> inputs, outputs;                  // value indices; -1 for an omitted input
  std::map<std::string, std::vector<int64_t>> ints;  // INT and INTS attributes
  std::map<std::string, float> floats;
  std::map<std::string, std::string> strings;

  int64_t Int(const std::string& key, int64_t fallback) const;
  std::vector<int64_t> Ints(const std::string& key, std::vector<int64_t> fallback = {}) const;
  float Float(const std::string& key, float fallback) const;
  std::string String(const std::string& key, const std::string& fallback) const;
  std::string Describe() const { return op_type + " node '" + name + "'"; }
  int Input(size_t i) const { return i < inputs.size() ? inputs[i] : -1; }
};

struct GroupDesc {
  std::vector<GroupValue> values;
  std::vector<GroupNode> nodes;  // in execution order
  size_t num_inputs = 0, num_outputs = 0;
  // Whether every value's shape is known: the group is compiled once, at CompileGroup.
  bool static_shapes = true;
};

// Reads `group` (a graph view of CompileGroup); constants are borrowed from the view unless the
// shapes are not all known, in which case they are copied. Throws when a node is not a blocked
// member.
GroupDesc ReadGroup(const NxGraph* group, int64_t block);

}  // namespace nxrt::cpu::blocked
