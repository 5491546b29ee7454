// The "streams" area of `nxrt certify` (plugin ABI 13): an EP that queues its kernels and copies
// on streams must give what the CPU EP gives, run after run; must stay usable after a failed
// run (the host synchronises its streams before freeing what queued work reads); and should
// say when its queued work ran (NxEvent::GetCompletionTime), which the profile shows.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "nxrt/certify_context.h"
#include "nxrt/certify_models.h"

namespace nxrt::cli::certify {
namespace {

constexpr const char* kArea = "streams";

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

void CheckStreams(Context& ctx) {
  if (!ctx.loaded) return;
  const std::vector<std::string> ops =
      ctx.chain_ops.empty() ? std::vector<std::string>{"Add"} : ctx.chain_ops;
  const std::string model = ChainModel(ops);
  const ModelInputs in = ChainInputs();
  const std::string profile = (ctx.options.work_dir / "streams_profile.json").string();
  std::vector<Value> expected;
  try {
    SessionOptions cpu = Context::CpuSession();
    Session reference(*ctx.env, model.data(), model.size(), &cpu);
    expected = reference.Run(in.names, in.pointers());
    SessionOptions options = ctx.EpSession();
    options.SetProfileFile(profile);
    Session session(*ctx.env, model.data(), model.size(), &options);
    const int64_t streams = session.statistic("streams");
    if (streams == 0) {
      ctx.Add(kArea, "streams", CheckStatus::kSkipped,
              "the EP runs synchronously (no NxEp::CreateStream, or no stream with these options)");
      return;
    }
    ctx.Add(kArea, "streams", CheckStatus::kPassed,
            std::to_string(streams) + " streams for the elementwise chain");

    // Queued runs: each equal to the CPU EP's result, and all equal to the first.
    std::vector<Value> first;
    std::string why;
    bool ok = true;
    constexpr int kRuns = 20;
    for (int r = 0; r < kRuns && ok; ++r) {
      std::vector<Value> out = session.Run(in.names, in.pointers());
      ok = SameOutputs(out, expected, {"Z"}, kCpuRtol, kCpuAtol, &why) &&
           (r == 0 || SameOutputs(out, first, {"Z"}, 0.0, 0.0, &why));
      if (r == 0) first = std::move(out);
    }
    ctx.Add(kArea, std::to_string(kRuns) + " queued runs",
            ok ? CheckStatus::kPassed : CheckStatus::kFailed,
            ok ? "equal to the CPU EP, and to each other bit for bit" : why);

    // The profile: executed spans on the streams' tracks (category "stream").
    session.EndProfiling();
    std::ifstream file(profile);
    std::stringstream text;
    text << file.rdbuf();
    const size_t spans = Count(text.str(), "\"cat\":\"stream\"");
    if (spans > 0)
      ctx.Add(kArea, "executed spans", CheckStatus::kPassed,
              std::to_string(spans) + " spans of queued work in the profile");
    else
      ctx.Add(kArea, "executed spans", CheckStatus::kSkipped,
              "the EP's events give no completion time (NxEvent::GetCompletionTime): the profile "
              "cannot show when queued work ran");
  } catch (const std::exception& e) {
    ctx.Add(kArea, "queued runs", CheckStatus::kFailed, e.what());
    return;
  }
  std::error_code ignored;
  std::filesystem::remove(profile, ignored);

  // A failed run (an input of the wrong shape) must leave the session and its streams usable.
  try {
    SessionOptions options = ctx.EpSession();
    Session session(*ctx.env, model.data(), model.size(), &options);
    Value bad = Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{7, 3});
    std::vector<const Value*> inputs = in.pointers();
    inputs.back() = &bad;
    bool failed = false;
    try {
      session.Run(in.names, inputs);
    } catch (const std::exception&) {
      failed = true;
    }
    std::string why;
    const bool ok = SameOutputs(session.Run(in.names, in.pointers()), expected, {"Z"}, kCpuRtol,
                                kCpuAtol, &why);
    ctx.Add(kArea, "a run after a failed run", ok ? CheckStatus::kPassed : CheckStatus::kFailed,
            ok ? (failed ? "the bad run failed cleanly, the next equals the CPU EP"
                         : "the next run equals the CPU EP")
               : why);
  } catch (const std::exception& e) {
    ctx.Add(kArea, "a run after a failed run", CheckStatus::kFailed, e.what());
  }
}

}  // namespace nxrt::cli::certify
