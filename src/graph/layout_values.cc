#include "graph/layout_values.h"

#include <string>
#include <utility>

#include "nxrt/nxrt_ep_api.h"

namespace nxrt {

int AddPermutedValue(Graph& g, int v, const std::vector<int64_t>& perm) {
  const ValueDef original = g.value(v);
  std::string name = original.name + "_nhwc";
  for (int i = 1; g.FindValue(name) >= 0; ++i) name = original.name + "_nhwc_" + std::to_string(i);
  const int nv = g.GetOrAddValue(name);
  ValueDef& def = g.value(nv);
  def.type.kind = original.type.kind;
  def.type.elem_type = original.type.elem_type;
  if (original.type.has_shape && original.type.dims.size() == 4 && perm.size() == 4) {
    def.type.has_shape = true;
    def.type.dims.clear();
    def.type.dim_params.clear();
    for (int64_t p : perm) {
      const auto axis = static_cast<size_t>(p);
      def.type.dims.push_back(original.type.dims[axis]);
      def.type.dim_params.push_back(
          original.type.dim_params.size() == 4 ? original.type.dim_params[axis] : "");
    }
  }
  return nv;
}

void AppendTranspose(Graph& g, int from, int to, std::vector<int64_t> perm, int opset) {
  Node t;
  t.owner = &g;
  t.name = g.value(to).name + "_transpose";
  t.op_type = "Transpose";
  t.opset = opset;
  t.inputs = {from};
  t.outputs = {to};
  Attribute a;
  a.name = "perm";
  a.type = NX_ATTR_INTS;
  a.ints = std::move(perm);
  t.attributes.push_back(std::move(a));
  g.nodes.push_back(std::move(t));
}

}  // namespace nxrt
