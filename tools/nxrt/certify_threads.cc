// The "threads" area of `nxrt certify`: one session on the EP run from 8 threads at once (N runs
// each) must give exactly what a lone run gives: kernels may not share mutable state between
// concurrent runs.
#include <algorithm>
#include <mutex>
#include <thread>

#include "nxrt/certify_context.h"
#include "nxrt/certify_models.h"
#include "nxrt/node_case.h"

namespace nxrt::cli::certify {
namespace {

constexpr const char* kArea = "threads";

struct Workload {
  std::string name;
  std::string model_bytes;  // or, when empty, model_path
  std::string model_path;
  std::vector<std::string> input_names, output_names;
  std::vector<Value> inputs;
};

size_t InputElements(const NodeCase& c) {
  size_t n = 0;
  for (const Value& v : c.data_sets[0].inputs)
    if (NxValue_GetKind(v.get()) == NX_VALUE_TENSOR) n += v.size();
  return n;
}

std::vector<Workload> Workloads(const Context& ctx) {
  std::vector<Workload> out;
  if (!ctx.chain_ops.empty()) {
    ModelInputs in = ChainInputs();
    std::string ops;
    for (const std::string& op : ctx.chain_ops) ops += (ops.empty() ? "" : ", ") + op;
    out.push_back({"elementwise chain (" + ops + ")",
                   ChainModel(ctx.chain_ops),
                   "",
                   in.names,
                   {"Z"},
                   std::move(in.values)});
  }
  // The three node tests with the most input elements among those that ran wholly on the EP.
  std::vector<std::pair<size_t, NodeCase>> cases;
  for (const auto& dir : ctx.passed_cases) {
    try {
      NodeCase c = ReadNodeCase(dir);
      cases.emplace_back(InputElements(c), std::move(c));
    } catch (const std::exception&) {
    }
  }
  std::stable_sort(cases.begin(), cases.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < cases.size() && i < 3; ++i) {
    NodeCase& c = cases[i].second;
    NodeDataSet& ds = c.data_sets[0];
    out.push_back({c.dir.filename().string(), "", (c.dir / "model.onnx").string(), ds.input_names,
                   ds.output_names, std::move(ds.inputs)});
  }
  return out;
}

}  // namespace

void CheckThreads(Context& ctx) {
  if (!ctx.loaded) return;
  const std::vector<Workload> workloads = Workloads(ctx);
  if (workloads.empty()) {
    ctx.Add(kArea, "concurrent runs", CheckStatus::kSkipped, "nothing the EP claims to run");
    return;
  }
  const std::string what = std::to_string(ctx.options.threads) + " threads x " +
                           std::to_string(ctx.options.runs) + " runs";
  for (const Workload& w : workloads) {
    const std::string name = w.name + ", " + what;
    try {
      SessionOptions options = ctx.EpSession();
      Session session = w.model_bytes.empty() ? Session(*ctx.env, w.model_path, &options)
                                              : Session(*ctx.env, w.model_bytes.data(),
                                                        w.model_bytes.size(), &options);
      std::vector<const Value*> inputs;
      for (const Value& v : w.inputs) inputs.push_back(&v);
      const std::vector<Value> serial = session.Run(w.input_names, inputs, w.output_names);
      std::mutex mutex;
      std::string first_error;
      int mismatches = 0;
      std::vector<std::thread> threads;
      for (int t = 0; t < ctx.options.threads; ++t) {
        threads.emplace_back([&] {
          for (int r = 0; r < ctx.options.runs; ++r) {
            std::string why;
            bool same = false;
            try {
              same = SameOutputs(session.Run(w.input_names, inputs, w.output_names), serial,
                                 w.output_names, 0.0, 0.0, &why);
            } catch (const std::exception& e) {
              why = e.what();
            }
            if (!same) {
              std::lock_guard<std::mutex> lock(mutex);
              if (mismatches++ == 0) first_error = why;
            }
          }
        });
      }
      for (std::thread& t : threads) t.join();
      if (mismatches == 0)
        ctx.Add(kArea, name, CheckStatus::kPassed, "every run equal to the lone run, bit for bit");
      else
        ctx.Add(
            kArea, name, CheckStatus::kFailed,
            std::to_string(mismatches) + " runs differ from the lone run; first: " + first_error);
    } catch (const std::exception& e) {
      ctx.Add(kArea, name, CheckStatus::kFailed, e.what());
    }
  }
}

}  // namespace nxrt::cli::certify
