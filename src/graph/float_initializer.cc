#include "graph/float_initializer.h"

#include <algorithm>

#include "base/value.h"

namespace nxrt {

int AddFloatInitializer(Graph& graph, const std::string& base, const std::vector<int64_t>& dims,
                        const std::vector<float>& data) {
  std::string name = base;
  for (int i = 1; graph.FindValue(name) >= 0; ++i) name = base + "_" + std::to_string(i);
  const int v = graph.GetOrAddValue(name);
  ValueDef& def = graph.value(v);
  def.initializer = MakeTensor(NX_TYPE_FLOAT, dims);
  std::copy(data.begin(), data.end(), static_cast<float*>(def.initializer->data));
  def.type.kind = NX_VALUE_TENSOR;
  def.type.elem_type = NX_TYPE_FLOAT;
  def.type.has_shape = true;
  def.type.dims = dims;
  def.type.dim_params.assign(dims.size(), "");
  return v;
}

}  // namespace nxrt
