#include "ort_plugins/ort_kernel_registry.h"

#include <mutex>
#include <string>
#include <unordered_set>

#include "ort_plugins/ort_api_helpers.h"

namespace nxrt::ort {
namespace {

// ---- The schema table -------------------------------------------------------------------------

struct TypeParamRow {
  const char* domain;
  const char* op_type;
  int since_version;
  const char* inputs;
  const char* outputs;
  const char* input_names;
  const char* output_names;
};

constexpr TypeParamRow kRows[] = {
#define NXRT_ONNX_TYPE_PARAMS(domain, op, since, inputs, outputs, input_names, output_names) \
  {domain, op, since, inputs, outputs, input_names, output_names},
#include "ort_plugins/onnx_type_params.inc"
#undef NXRT_ONNX_TYPE_PARAMS
};

// "T,,T*" -> {"T", "", "T"} with the variadic marks.
void SplitParams(const char* text, std::vector<std::string>& names, bool& variadic,
                 bool& heterogeneous) {
  std::string all = text;
  if (all.empty()) return;
  size_t start = 0;
  while (true) {
    const size_t comma = all.find(',', start);
    names.push_back(
        all.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::string& last = names.back();
  if (!last.empty() && (last.back() == '*' || last.back() == '+')) {
    variadic = true;
    heterogeneous = last.back() == '+';
    last.pop_back();
  }
}

using SchemaMap = std::map<std::pair<std::string, std::string>, std::vector<OnnxTypeParams>>;

const SchemaMap& Schemas() {
  static const SchemaMap* map = [] {
    auto* m = new SchemaMap();
    for (const TypeParamRow& row : kRows) {
      OnnxTypeParams p;
      p.since_version = row.since_version;
      SplitParams(row.inputs, p.inputs, p.variadic_input, p.heterogeneous_input);
      SplitParams(row.outputs, p.outputs, p.variadic_output, p.heterogeneous_output);
      bool unused_variadic = false, unused_heterogeneous = false;
      SplitParams(row.input_names, p.input_names, unused_variadic, unused_heterogeneous);
      SplitParams(row.output_names, p.output_names, unused_variadic, unused_heterogeneous);
      (*m)[{row.domain, row.op_type}].push_back(std::move(p));  // rows are sorted by version
    }
    return m;
  }();
  return *map;
}

// ---- Objects the host made -------------------------------------------------------------------
// Registries and definitions handed to the plugin: a pointer it passes back is read only when it
// is one of them (a wild pointer is an error, not a crash; LiveSet in ort_api_helpers.h).
LiveSet<OrtKernelDef>& LiveDefs() {
  static auto* s = new LiveSet<OrtKernelDef>();
  return *s;
}
LiveSet<OrtKernelRegistry>& LiveRegistries() {
  static auto* s = new LiveSet<OrtKernelRegistry>();
  return *s;
}

// ---- Data types
// -----------------------------------------------------------------------------------

// ONNX element types 1 (float) .. 26 (int2): one OrtDataType each, owned by the host.
constexpr int kMaxElementType = 26;

const OrtDataType* TensorDataType(int element_type) {
  static const OrtDataType* types = [] {
    auto* t = new OrtDataType[kMaxElementType + 1];
    for (int i = 0; i <= kMaxElementType; ++i) t[i] = OrtDataType{ONNX_TYPE_TENSOR, i};
    return t;
  }();
  return element_type >= 1 && element_type <= kMaxElementType ? &types[element_type] : nullptr;
}

OrtStatus* GetTensorDataType(int element_type, const OrtDataType** out) {
  if (!out) return NullArgument("GetTensorDataType");
  *out = TensorDataType(element_type);
  if (*out == nullptr)
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "GetTensorDataType: " + std::to_string(element_type) +
                                                  " is not an ONNX tensor element type");
  return nullptr;
}

// ---- Definitions --------------------------------------------------------------------------------

OrtStatus* CreateKernelDefBuilder(OrtKernelDefBuilder** out) {
  if (!out) return NullArgument("CreateKernelDefBuilder");
  return Guard("CreateKernelDefBuilder", [&]() -> OrtStatus* {
    *out = new OrtKernelDefBuilder();
    return nullptr;
  });
}
void ReleaseKernelDefBuilder(OrtKernelDefBuilder* b) { delete b; }

OrtStatus* SetOperatorType(OrtKernelDefBuilder* b, const char* op_type) {
  if (!b || !op_type) return NullArgument("KernelDefBuilder_SetOperatorType");
  return Guard("KernelDefBuilder_SetOperatorType", [&]() -> OrtStatus* {
    b->def.op_type = op_type;
    return nullptr;
  });
}
OrtStatus* SetDomain(OrtKernelDefBuilder* b, const char* domain) {
  if (!b || !domain) return NullArgument("KernelDefBuilder_SetDomain");
  return Guard("KernelDefBuilder_SetDomain", [&]() -> OrtStatus* {
    b->def.domain = std::string(domain) == "ai.onnx" ? "" : domain;
    return nullptr;
  });
}
OrtStatus* SetSinceVersion(OrtKernelDefBuilder* b, int start, int end) {
  if (!b) return NullArgument("KernelDefBuilder_SetSinceVersion");
  if (start < 1 || end < start)
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "KernelDefBuilder_SetSinceVersion: the range " +
                                                  std::to_string(start) + ".." +
                                                  std::to_string(end) + " is empty or below 1");
  b->def.since_start = start;
  b->def.since_end = end;
  return nullptr;
}
OrtStatus* SetExecutionProvider(OrtKernelDefBuilder* b, const char* ep_name) {
  if (!b || !ep_name) return NullArgument("KernelDefBuilder_SetExecutionProvider");
  return Guard("KernelDefBuilder_SetExecutionProvider", [&]() -> OrtStatus* {
    b->def.ep_name = ep_name;
    return nullptr;
  });
}
bool ValidMemType(OrtMemType t) {
  return t == OrtMemTypeCPUInput || t == OrtMemTypeCPUOutput || t == OrtMemTypeDefault;
}
OrtStatus* SetInputMemType(OrtKernelDefBuilder* b, size_t index, OrtMemType mem_type) {
  if (!b) return NullArgument("KernelDefBuilder_SetInputMemType");
  if (!ValidMemType(mem_type))
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "KernelDefBuilder_SetInputMemType: unknown OrtMemType");
  return Guard("KernelDefBuilder_SetInputMemType", [&]() -> OrtStatus* {
    b->def.input_mem[index] = mem_type;
    return nullptr;
  });
}
OrtStatus* SetOutputMemType(OrtKernelDefBuilder* b, size_t index, OrtMemType mem_type) {
  if (!b) return NullArgument("KernelDefBuilder_SetOutputMemType");
  if (!ValidMemType(mem_type))
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "KernelDefBuilder_SetOutputMemType: unknown OrtMemType");
  return Guard("KernelDefBuilder_SetOutputMemType", [&]() -> OrtStatus* {
    b->def.output_mem[index] = mem_type;
    return nullptr;
  });
}
OrtStatus* AddTypeConstraint(OrtKernelDefBuilder* b, const char* name,
                             const OrtDataType* const* types, size_t count) {
  if (!b || !name || (count > 0 && !types))
    return NullArgument("KernelDefBuilder_AddTypeConstraint");
  return Guard("KernelDefBuilder_AddTypeConstraint", [&]() -> OrtStatus* {
    std::vector<int> allowed;
    for (size_t i = 0; i < count; ++i) {
      // Only the host's own data types are read (GetTensorDataType hands them out).
      const OrtDataType* t = types[i];
      const OrtDataType* known = t ? TensorDataType(t->element_type) : nullptr;
      if (t == nullptr || known != t)
        return NewOrtStatus(ORT_INVALID_ARGUMENT,
                            "KernelDefBuilder_AddTypeConstraint: type " + std::to_string(i) +
                                " of '" + name +
                                "' is not an OrtDataType from OrtEpApi::GetTensorDataType");
      allowed.push_back(t->element_type);
    }
    for (auto& [n, list] : b->def.type_constraints)
      if (n == name) {
        list.insert(list.end(), allowed.begin(), allowed.end());
        return nullptr;
      }
    b->def.type_constraints.emplace_back(name, std::move(allowed));
    return nullptr;
  });
}
OrtStatus* AddPairs(const char* fn, std::vector<std::pair<int, int>>& to, const int* inputs,
                    const int* outputs, size_t count) {
  if ((count > 0 && (!inputs || !outputs))) return NullArgument(fn);
  return Guard(fn, [&]() -> OrtStatus* {
    for (size_t i = 0; i < count; ++i) {
      if (inputs[i] < 0 || outputs[i] < 0)
        return NewOrtStatus(ORT_INVALID_ARGUMENT, std::string(fn) + ": negative index");
      to.emplace_back(inputs[i], outputs[i]);
    }
    return nullptr;
  });
}
OrtStatus* AddInputOutputAliases(OrtKernelDefBuilder* b, const int* inputs, const int* outputs,
                                 size_t count) {
  if (!b) return NullArgument("KernelDefBuilder_AddInputOutputAliases");
  return AddPairs("KernelDefBuilder_AddInputOutputAliases", b->def.aliases, inputs, outputs, count);
}
OrtStatus* AddInputOutputMutableAliases(OrtKernelDefBuilder* b, const int* inputs,
                                        const int* outputs, size_t count) {
  if (!b) return NullArgument("KernelDefBuilder_AddInputOutputMutableAliases");
  return AddPairs("KernelDefBuilder_AddInputOutputMutableAliases", b->def.mutable_aliases, inputs,
                  outputs, count);
}
OrtStatus* Build(OrtKernelDefBuilder* b, OrtKernelDef** out) {
  if (!b || !out) return NullArgument("KernelDefBuilder_Build");
  *out = nullptr;
  if (b->def.op_type.empty())
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "KernelDefBuilder_Build: no operator type set");
  if (b->def.ep_name.empty())
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "KernelDefBuilder_Build: no execution provider set (SetExecutionProvider)");
  return Guard("KernelDefBuilder_Build", [&]() -> OrtStatus* {
    auto def = std::make_unique<OrtKernelDef>(b->def);
    LiveDefs().Add(def.get());
    *out = def.release();
    return nullptr;
  });
}
void ReleaseKernelDef(OrtKernelDef* def) {
  if (def != nullptr && LiveDefs().Remove(def)) delete def;
}

const char* KernelDefGetOperatorType(const OrtKernelDef* d) {
  return d ? d->op_type.c_str() : nullptr;
}
const char* KernelDefGetDomain(const OrtKernelDef* d) { return d ? d->domain.c_str() : nullptr; }
const char* KernelDefGetExecutionProvider(const OrtKernelDef* d) {
  return d ? d->ep_name.c_str() : nullptr;
}
OrtStatus* KernelDefGetSinceVersion(const OrtKernelDef* d, int* start, int* end) {
  if (!d || !start || !end) return NullArgument("KernelDef_GetSinceVersion");
  *start = d->since_start;
  *end = d->since_end;
  return nullptr;
}
OrtStatus* MemTypeOf(const std::map<size_t, OrtMemType>& m, size_t index, OrtMemType* out) {
  auto it = m.find(index);
  *out = it == m.end() ? OrtMemTypeDefault : it->second;
  return nullptr;
}
OrtStatus* KernelDefGetInputMemType(const OrtKernelDef* d, size_t index, OrtMemType* out) {
  if (!d || !out) return NullArgument("KernelDef_GetInputMemType");
  return MemTypeOf(d->input_mem, index, out);
}
OrtStatus* KernelDefGetOutputMemType(const OrtKernelDef* d, size_t index, OrtMemType* out) {
  if (!d || !out) return NullArgument("KernelDef_GetOutputMemType");
  return MemTypeOf(d->output_mem, index, out);
}

// ---- Registries ---------------------------------------------------------------------------------

OrtStatus* CreateKernelRegistry(OrtKernelRegistry** out) {
  if (!out) return NullArgument("CreateKernelRegistry");
  return Guard("CreateKernelRegistry", [&]() -> OrtStatus* {
    auto r = std::make_unique<OrtKernelRegistry>();
    LiveRegistries().Add(r.get());
    *out = r.release();
    return nullptr;
  });
}
void ReleaseKernelRegistry(OrtKernelRegistry* r) {
  if (r != nullptr && LiveRegistries().Remove(r)) delete r;
}

OrtStatus* KernelRegistryAddKernel(OrtKernelRegistry* r, const OrtKernelDef* def,
                                   OrtKernelCreateFunc create, void* state) {
  if (!r || !def || !create) return NullArgument("KernelRegistry_AddKernel");
  if (!LiveRegistries().Has(r))
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "KernelRegistry_AddKernel: not a registry from CreateKernelRegistry");
  if (!LiveDefs().Has(def))
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "KernelRegistry_AddKernel: not a definition from KernelDefBuilder_Build");
  return Guard("KernelRegistry_AddKernel", [&]() -> OrtStatus* {
    auto entry = std::make_unique<OrtKernelRegistry::Entry>();
    entry->def = *def;  // the plugin may release its definition once added
    entry->create = create;
    entry->state = state;
    r->entries.push_back(std::move(entry));
    return nullptr;
  });
}

}  // namespace

bool IsHostKernelRegistry(const OrtKernelRegistry* registry) {
  return registry != nullptr && LiveRegistries().Has(registry);
}
bool IsHostKernelDef(const OrtKernelDef* def) { return def != nullptr && LiveDefs().Has(def); }

const std::vector<OnnxTypeParams>& SchemaTypeParams(const std::string& domain,
                                                    const std::string& op_type) {
  static const std::vector<OnnxTypeParams> none;
  auto it = Schemas().find({domain == "ai.onnx" ? "" : domain, op_type});
  return it == Schemas().end() ? none : it->second;
}

void InstallKernelRegistryApi(OrtEpApi& ep_api) {
  ep_api.CreateKernelRegistry = Slot(&CreateKernelRegistry);
  ep_api.ReleaseKernelRegistry = Slot(&ReleaseKernelRegistry);
  ep_api.KernelRegistry_AddKernel = Slot(&KernelRegistryAddKernel);
  ep_api.CreateKernelDefBuilder = Slot(&CreateKernelDefBuilder);
  ep_api.ReleaseKernelDefBuilder = Slot(&ReleaseKernelDefBuilder);
  ep_api.KernelDefBuilder_SetOperatorType = Slot(&SetOperatorType);
  ep_api.KernelDefBuilder_SetDomain = Slot(&SetDomain);
  ep_api.KernelDefBuilder_SetSinceVersion = Slot(&SetSinceVersion);
  ep_api.KernelDefBuilder_SetExecutionProvider = Slot(&SetExecutionProvider);
  ep_api.KernelDefBuilder_SetInputMemType = Slot(&SetInputMemType);
  ep_api.KernelDefBuilder_SetOutputMemType = Slot(&SetOutputMemType);
  ep_api.KernelDefBuilder_AddTypeConstraint = Slot(&AddTypeConstraint);
  ep_api.KernelDefBuilder_AddInputOutputAliases = Slot(&AddInputOutputAliases);
  ep_api.KernelDefBuilder_AddInputOutputMutableAliases = Slot(&AddInputOutputMutableAliases);
  ep_api.KernelDefBuilder_Build = Slot(&Build);
  ep_api.ReleaseKernelDef = Slot(&ReleaseKernelDef);
  ep_api.KernelDef_GetOperatorType = Slot(&KernelDefGetOperatorType);
  ep_api.KernelDef_GetDomain = Slot(&KernelDefGetDomain);
  ep_api.KernelDef_GetSinceVersion = Slot(&KernelDefGetSinceVersion);
  ep_api.KernelDef_GetExecutionProvider = Slot(&KernelDefGetExecutionProvider);
  ep_api.KernelDef_GetInputMemType = Slot(&KernelDefGetInputMemType);
  ep_api.KernelDef_GetOutputMemType = Slot(&KernelDefGetOutputMemType);
  ep_api.GetTensorDataType = Slot(&GetTensorDataType);
}

}  // namespace nxrt::ort
