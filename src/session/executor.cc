// Session::Run: executes the kernels in topological order, freeing each intermediate value
// after its last use.
#include <cstring>

#include "base/element_type.h"
#include "base/error.h"
#include "session/session.h"

namespace nxrt {
namespace {

ValuePtr CopyValue(const Value& v) {
  auto copy = std::make_shared<Value>(v);
  if (v.kind == NX_VALUE_TENSOR && v.type != NX_TYPE_STRING) {
    ValuePtr fresh = MakeTensor(v.type, v.dims);
    if (TensorBytes(v)) std::memcpy(fresh->data, v.data, TensorBytes(v));
    return fresh;
  }
  return copy;
}

}  // namespace

std::vector<ValuePtr> Session::Run(const std::vector<std::string>& input_names,
                                   const std::vector<const Value*>& inputs,
                                   const std::vector<std::string>& output_names) const {
  const Graph& g = graph();
  const size_t num_values = g.values.size();
  std::vector<const Value*> slots(num_values, nullptr);
  std::vector<ValuePtr> owned(num_values);
  CheckFeeds(input_names, inputs, slots);
  for (size_t v = 0; v < num_values; ++v) {
    if (g.values[v].initializer && slots[v] == nullptr) slots[v] = g.values[v].initializer.get();
  }

  std::vector<int> wanted;
  if (output_names.empty()) {
    wanted = g.outputs;
  } else {
    for (const std::string& name : output_names) {
      int index = g.FindValue(name);
      bool is_output = false;
      for (int o : g.outputs) is_output = is_output || o == index;
      NXRT_CHECK(index >= 0 && is_output, NX_INVALID_ARGUMENT, "'" + name + "' is not an output of the model");
      wanted.push_back(index);
    }
  }

  std::vector<const Value*> node_inputs;
  std::vector<ValuePtr> node_outputs;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    node_inputs.assign(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      int v = node.inputs[i];
      if (v >= 0) node_inputs[i] = slots[static_cast<size_t>(v)];
    }
    node_outputs.assign(node.outputs.size(), nullptr);
    NxKernelContext ctx;
    ctx.node = &node;
    ctx.inputs = node_inputs.data();
    ctx.num_inputs = node_inputs.size();
    ctx.outputs = node_outputs.data();
    ctx.num_outputs = node_outputs.size();
    ctx.threads = threads_;
    ctx.pool = pool_.get();
    NxKernel* kernel = kernels_[n];
    ThrowIfStatus(kernel->Compute(kernel, &ctx),
                  node.Describe() + " (EP " + eps_[static_cast<size_t>(node_ep_[n])]->name() + ") failed");
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      int v = node.outputs[o];
      if (v < 0) continue;
      NXRT_CHECK(node_outputs[o] != nullptr, NX_RUNTIME_ERROR,
                 node.Describe() + ": the kernel did not produce output " + std::to_string(o) + " ('" +
                     g.value(v).name + "')");
      owned[static_cast<size_t>(v)] = std::move(node_outputs[o]);
      slots[static_cast<size_t>(v)] = owned[static_cast<size_t>(v)].get();
    }
    for (int v : free_after_[n]) {
      owned[static_cast<size_t>(v)].reset();
      slots[static_cast<size_t>(v)] = nullptr;
    }
  }

  std::vector<ValuePtr> results;
  results.reserve(wanted.size());
  for (int v : wanted) {
    if (owned[static_cast<size_t>(v)]) {
      results.push_back(owned[static_cast<size_t>(v)]);  // shared if asked twice: fine, read-only
    } else {
      const Value* value = slots[static_cast<size_t>(v)];
      NXRT_CHECK(value != nullptr, NX_RUNTIME_ERROR, "output '" + g.value(v).name + "' was not produced");
      results.push_back(CopyValue(*value));  // a graph input or an initializer: hand out a copy
    }
  }
  return results;
}

}  // namespace nxrt
