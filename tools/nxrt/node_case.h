// ONNX backend test case folders (model.onnx plus test_data_set_*/input_*.pb and output_*.pb),
// read for `nxrt conformance` and `nxrt certify`.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <nxrt/nxrt.hpp>
#include <set>
#include <string>
#include <vector>

namespace nxrt::cli {

// Case folders under `dirs` (a folder holding model.onnx is one case), sorted per folder.
std::vector<std::filesystem::path> FindNodeCases(const std::vector<std::string>& dirs);

std::string ReadWholeFile(const std::filesystem::path& p);

// One test_data_set_* folder: named inputs and the outputs the ONNX suite expects.
struct NodeDataSet {
  std::string name;  // "test_data_set_0"
  std::vector<std::string> input_names;
  std::vector<Value> inputs;
  std::vector<std::string> output_names;
  std::vector<Value> expected;

  std::vector<const Value*> input_pointers() const {
    std::vector<const Value*> p;
    for (const Value& v : inputs) p.push_back(&v);
    return p;
  }
};

struct NodeCase {
  std::filesystem::path dir;
  std::string model_bytes;
  onnx::ModelProto model;
  std::set<std::string> ops;  // "Add", "com.microsoft.Attention" (control-flow bodies included)
  std::vector<NodeDataSet> data_sets;
};

// Reads a case folder. Throws nxrt::Exception when the model does not parse, there is no data
// set, or the files do not fit the model (more inputs or outputs than it declares).
NodeCase ReadNodeCase(const std::filesystem::path& dir);

}  // namespace nxrt::cli
