// What stands behind the kernel-registry handles of onnxruntime's plugin interface (level 24):
// kernel definitions a plugin builds (OrtKernelDefBuilder -> OrtKernelDef), the registry it adds
// them to (OrtKernelRegistry) and the data types of its type constraints (OrtDataType). Plain
// data: nxrt's own registry is built from it when a session asks the EP (ort_kernel_adapter.cc).
#pragma once

#include <climits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ort_plugins/ort_abi.h"
#include "ort_plugins/ort_graph_view.h"

struct OrtDataType {
  ONNXType kind = ONNX_TYPE_TENSOR;
  int element_type = 0;  // ONNXTensorElementDataType (nxrt's NxElementType numbering)
};

struct OrtKernelDef {
  std::string op_type;
  std::string domain;  // "" for ai.onnx
  std::string ep_name;
  int since_start = 1;
  int since_end = INT_MAX;  // inclusive
  std::map<size_t, OrtMemType> input_mem;
  std::map<size_t, OrtMemType> output_mem;
  // Type parameter name ("T") -> allowed element types, in the order the plugin added them.
  std::vector<std::pair<std::string, std::vector<int>>> type_constraints;
  std::vector<std::pair<int, int>> aliases;          // (input, output)
  std::vector<std::pair<int, int>> mutable_aliases;  // (input, output)
};

struct OrtKernelDefBuilder {
  OrtKernelDef def;
};

struct OrtKernelRegistry {
  struct Entry {
    OrtKernelDef def;
    OrtKernelCreateFunc create = nullptr;
    void* state = nullptr;
  };
  std::vector<std::unique_ptr<Entry>> entries;
};

namespace nxrt::ort {

// The type parameter and name of each formal input and output of an ONNX operator schema, as the
// schema in effect at `since_version` declares them (tools/scripts/gen_onnx_type_params.py).
struct OnnxTypeParams {
  int since_version = 0;
  std::vector<std::string> inputs;       // "" for a fixed type
  std::vector<std::string> outputs;      // ditto
  std::vector<std::string> input_names;  // the formal parameters' names ("data", "axes", ...)
  std::vector<std::string> output_names;
  bool variadic_input = false;  // the last formal input repeats
  bool variadic_output = false;
  bool heterogeneous_input = false;  // ... and its values may each have their own type
  bool heterogeneous_output = false;
};
// Every schema version of (domain, op), oldest first; empty for operators the table does not know
// (custom domains).
const std::vector<OnnxTypeParams>& SchemaTypeParams(const std::string& domain,
                                                    const std::string& op_type);

// Whether a pointer a plugin hands back is a live registry / definition the host made.
bool IsHostKernelRegistry(const OrtKernelRegistry* registry);
bool IsHostKernelDef(const OrtKernelDef* def);

// Fills the OrtEpApi slots that build definitions and registries.
void InstallKernelRegistryApi(OrtEpApi& ep_api);

}  // namespace nxrt::ort
