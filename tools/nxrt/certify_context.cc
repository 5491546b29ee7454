#include "nxrt/certify_context.h"

#include "nxrt/value_format.h"

namespace nxrt::cli::certify {

std::unique_ptr<Env> Context::NewEnv() const {
  auto env = std::make_unique<Env>(NX_LOG_ERROR);
  env->RegisterEpLibrary(registration, options.library, options.virtual_devices);
  return env;
}

SessionOptions Context::EpSession(NxFallbackMode fallback, int threads) const {
  SessionOptions o;
  o.SetLogLevel(NX_LOG_ERROR);
  o.SetIntraOpThreads(threads);
  o.AppendEp(ep, ep_options);
  o.SetFallback(fallback);
  return o;
}

SessionOptions Context::CpuSession() {
  SessionOptions o;
  o.SetLogLevel(NX_LOG_ERROR);
  o.SetIntraOpThreads(1);
  return o;
}

size_t Context::NodesOnEp(const AssignmentReport& r) const {
  size_t n = 0;
  for (const AssignedSubgraph& s : r.subgraphs)
    if (s.ep_name == ep) n += s.nodes.size();
  return n;
}

size_t Context::NodesInAll(const AssignmentReport& r) {
  size_t n = 0;
  for (const AssignedSubgraph& s : r.subgraphs) n += s.nodes.size();
  return n;
}

bool Context::HasFusedGroup(const AssignmentReport& r) const {
  for (const AssignedSubgraph& s : r.subgraphs)
    if (s.ep_name == ep && s.kind == "fused") return true;
  return false;
}

bool SameOutputs(const std::vector<Value>& actual, const std::vector<Value>& expected,
                 const std::vector<std::string>& names, double rtol, double atol,
                 std::string* why) {
  if (actual.size() != expected.size()) {
    *why = std::to_string(actual.size()) + " outputs, expected " + std::to_string(expected.size());
    return false;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    std::string where;
    if (!Matches(actual[i].get(), expected[i].get(), rtol, atol, &where)) {
      *why = "output '" + (i < names.size() ? names[i] : std::to_string(i)) + "': " + where;
      return false;
    }
  }
  return true;
}

namespace {

Value BoolScalar(bool b) {
  Value v = Value::Tensor(NX_TYPE_BOOL, std::vector<int64_t>{});
  v.data<uint8_t>()[0] = b ? 1 : 0;
  return v;
}

Value Int64Scalar(int64_t x) {
  Value v = Value::Tensor(NX_TYPE_INT64, std::vector<int64_t>{});
  v.data<int64_t>()[0] = x;
  return v;
}

}  // namespace

ModelInputs ChainInputs() {
  ModelInputs in;
  in.names = {"X", "Y"};
  in.values.push_back(RandomTensor(NX_TYPE_FLOAT, {2, 3, 4, 5}, 1));
  in.values.push_back(RandomTensor(NX_TYPE_FLOAT, {2, 3, 4, 5}, 2));
  return in;
}

ModelInputs IfInputs(bool cond) {
  ModelInputs in = ChainInputs();
  in.names.insert(in.names.begin(), "cond");
  in.values.insert(in.values.begin(), BoolScalar(cond));
  return in;
}

ModelInputs LoopInputs(int64_t trips) {
  ModelInputs in = ChainInputs();
  in.names.insert(in.names.begin(), "M");
  in.values.insert(in.values.begin(), Int64Scalar(trips));
  return in;
}

ModelInputs ScanInputs() {
  ModelInputs in;
  in.names = {"S0", "X"};
  in.values.push_back(RandomTensor(NX_TYPE_FLOAT, {3, 4, 5}, 3));
  in.values.push_back(RandomTensor(NX_TYPE_FLOAT, {2, 3, 4, 5}, 4));
  return in;
}

ModelInputs WeightInputs(const std::string& op) {
  ModelInputs in;
  if (op == "Conv") {
    in.names = {"X"};
    in.values.push_back(RandomTensor(NX_TYPE_FLOAT, {1, 3, 8, 8}, 5));
  } else {
    in.names = {"A"};
    in.values.push_back(RandomTensor(NX_TYPE_FLOAT, {4, 16}, 6));
  }
  return in;
}

}  // namespace nxrt::cli::certify
