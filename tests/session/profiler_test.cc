// Profiling: a session given a profile file writes a Chrome trace (parsed here with a small
// strict JSON parser): session events for its creation, one "run" event per run enclosing one
// event per node (EP, device, op type, shapes, run index), control-flow body nodes inside their
// node, events EPs add through the kernel context; and the error cases.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nxrt/nxrt.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "controlflow/cf_models.h"
#include "test_util.h"

namespace {

using namespace nxrt::test::cf;

// ---- A strict JSON parser (RFC 8259), enough to check the trace's structure ----------------
struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  // Members in order: keys[i] names values[i] (two vectors, not a vector of pairs: a pair of an
  // incomplete type is not allowed, and clang's library checks).
  std::vector<std::string> keys;
  std::vector<Json> values;

  const Json* Find(const std::string& key) const {
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return &values[i];
    return nullptr;
  }
  // The string member `key` ("" when absent or not a string).
  std::string Str(const std::string& key) const {
    const Json* v = Find(key);
    return v != nullptr && v->kind == kString ? v->string : "";
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}
  Json ParseDocument() {
    Json v = Value();
    Space();
    if (i_ != s_.size()) Fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(i_));
  }
  void Space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void Expect(char c) {
    if (!Eat(c)) Fail(std::string("expected '") + c + "'");
  }
  void Literal(const char* word) {
    for (const char* p = word; *p; ++p, ++i_)
      if (i_ >= s_.size() || s_[i_] != *p) Fail(std::string("bad literal, expected ") + word);
  }
  Json Value() {
    Space();
    if (i_ >= s_.size()) Fail("unexpected end");
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      v.kind = Json::kObject;
      ++i_;
      if (Eat('}')) return v;
      do {
        Space();
        std::string key = String();
        Expect(':');
        v.keys.push_back(std::move(key));
        v.values.push_back(Value());
      } while (Eat(','));
      Expect('}');
    } else if (c == '[') {
      v.kind = Json::kArray;
      ++i_;
      if (Eat(']')) return v;
      do v.array.push_back(Value());
      while (Eat(','));
      Expect(']');
    } else if (c == '"') {
      v.kind = Json::kString;
      v.string = String();
    } else if (c == 't') {
      Literal("true");
      v.kind = Json::kBool;
      v.boolean = true;
    } else if (c == 'f') {
      Literal("false");
      v.kind = Json::kBool;
    } else if (c == 'n') {
      Literal("null");
    } else {
      v.kind = Json::kNumber;
      v.number = Number();
    }
    return v;
  }
  double Number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t from = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == from) Fail("expected a digit");
    };
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0')
      ++i_;
    else
      digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    return std::stod(s_.substr(start, i_ - start));
  }
  unsigned Hex4() {
    if (i_ + 4 > s_.size()) Fail("short \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<unsigned>(c - 'A' + 10);
      else
        Fail("bad hex digit");
    }
    return v;
  }
  static void Utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::string String() {
    if (i_ >= s_.size() || s_[i_] != '"') Fail("expected a string");
    ++i_;
    std::string out;
    while (true) {
      if (i_ >= s_.size()) Fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return out;
      if (c < 0x20) Fail("raw control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) Fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = Hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') Fail("lone surrogate");
            i_ += 2;
            const unsigned low = Hex4();
            if (low < 0xDC00 || low > 0xDFFF) Fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            Fail("lone surrogate");
          }
          Utf8(out, cp);
          break;
        }
        default:
          Fail("bad escape");
      }
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The trace's complete events, checked against the format as they are collected.
struct Trace {
  Json root;
  std::vector<const Json*> events;    // "ph":"X"
  std::vector<const Json*> metadata;  // "ph":"M"

  std::vector<const Json*> Named(const std::string& name) const {
    std::vector<const Json*> out;
    for (const Json* e : events)
      if (e->Str("name") == name) out.push_back(e);
    return out;
  }
  std::vector<const Json*> Cat(const std::string& cat) const {
    std::vector<const Json*> out;
    for (const Json* e : events)
      if (e->Str("cat") == cat) out.push_back(e);
    return out;
  }
};

double Num(const Json& e, const std::string& key) {
  const Json* v = e.Find(key);
  return v != nullptr && v->kind == Json::kNumber ? v->number : -1;
}
std::string Arg(const Json& e, const std::string& key) {
  const Json* args = e.Find("args");
  return args != nullptr ? args->Str(key) : "";
}
bool HasArg(const Json& e, const std::string& key) {
  const Json* args = e.Find("args");
  return args != nullptr && args->Find(key) != nullptr;
}
// `inner` lies within `outer` on the same thread (how trace viewers nest complete events).
bool Within(const Json& inner, const Json& outer) {
  const double eps = 0.0015;  // the writer rounds to the nanosecond
  return Num(inner, "tid") == Num(outer, "tid") && Num(inner, "ts") + eps >= Num(outer, "ts") &&
         Num(inner, "ts") + Num(inner, "dur") <= Num(outer, "ts") + Num(outer, "dur") + eps;
}

// Parses `path` and checks every event against the Chrome trace format (fatal test failures).
void LoadTrace(const std::string& path, Trace& t) {
  const std::string text = ReadFile(path);
  ASSERT_FALSE(text.empty()) << path;
  ASSERT_NO_THROW(t.root = JsonParser(text).ParseDocument()) << text.substr(0, 2000);
  ASSERT_EQ(t.root.kind, Json::kObject);
  const Json* events = t.root.Find("traceEvents");
  ASSERT_NE(events, nullptr);
  ASSERT_EQ(events->kind, Json::kArray);
  EXPECT_EQ(t.root.Str("displayTimeUnit"), "ms");
  const Json* other = t.root.Find("otherData");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->kind, Json::kObject);
  EXPECT_EQ(other->Str("producer"), "nxrt");
  for (const Json& e : events->array) {
    ASSERT_EQ(e.kind, Json::kObject);
    const std::string ph = e.Str("ph");
    ASSERT_TRUE(ph == "X" || ph == "M") << ph;
    ASSERT_FALSE(e.Str("name").empty());
    ASSERT_GE(Num(e, "pid"), 0);
    ASSERT_GE(Num(e, "tid"), 0);
    const Json* args = e.Find("args");
    ASSERT_NE(args, nullptr);
    ASSERT_EQ(args->kind, Json::kObject);
    for (size_t i = 0; i < args->keys.size(); ++i)
      ASSERT_EQ(args->values[i].kind, Json::kString) << args->keys[i];
    if (ph == "M") {
      t.metadata.push_back(&e);
      continue;
    }
    ASSERT_FALSE(e.Str("cat").empty()) << e.Str("name");
    ASSERT_GE(Num(e, "ts"), 0) << e.Str("name");
    ASSERT_GE(Num(e, "dur"), 0) << e.Str("name");
    t.events.push_back(&e);
  }
}

std::string ProfilePath(const std::string& name) {
  return (std::filesystem::path(nxrt::test::TempDir()) / name).string();
}

// x -> Add(+1) -> Sigmoid -> Mul(*2) -> y, float[2,3].
std::string Chain() {
  return Model(Graph(
      "chain",
      {MakeNode("Add", {"x", "one"}, {"a"}, "add"), MakeNode("Sigmoid", {"a"}, {"s"}, "sigmoid"),
       MakeNode("Mul", {"s", "two"}, {"y"}, "mul")},
      {Info("x", F, {2, 3})}, {Info("y", F, {2, 3})},
      {nxrt::test::MakeFloatTensor("one", {1}, {1}),
       nxrt::test::MakeFloatTensor("two", {1}, {2})}));
}

nxrt::Value Input23() {
  auto v = nxrt::Value::Tensor(NX_TYPE_FLOAT, std::vector<int64_t>{2, 3});
  for (int i = 0; i < 6; ++i) v.data<float>()[i] = static_cast<float>(i) - 2.5f;
  return v;
}

TEST(Profiler, RunsWriteChromeTraceWithNodeEventsInsideRunEvents) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = Chain();
  const std::string path = ProfilePath("chain.json");
  nxrt::SessionOptions o;
  o.SetProfileFile(path);
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  nxrt::Value x = Input23();
  constexpr int kRuns = 3;
  for (int r = 0; r < kRuns; ++r) s.Run({"x"}, {&x});
  s.EndProfiling();

  Trace t;
  LoadTrace(path, t);
  if (HasFatalFailure()) return;
  // Metadata names the process and every thread that recorded.
  bool process_named = false;
  std::map<double, bool> thread_named;
  for (const Json* m : t.metadata) {
    if (m->Str("name") == "process_name") process_named = true;
    if (m->Str("name") == "thread_name") thread_named[Num(*m, "tid")] = true;
  }
  EXPECT_TRUE(process_named);
  for (const Json* e : t.events) EXPECT_TRUE(thread_named[Num(*e, "tid")]) << e->Str("name");

  // Session events of the creation, in order, before the first run.
  std::vector<std::string> steps;
  for (const Json* e : t.Cat("session"))
    if (e->Str("name") != "run") steps.push_back(e->Str("name"));
  EXPECT_EQ(steps, (std::vector<std::string>{"load", "create_eps", "partition", "optimize",
                                             "create_kernels", "plan_memory"}));
  ASSERT_EQ(t.Named("load").size(), 1u);
  EXPECT_EQ(Num(*t.Named("load")[0], "ts"), 0);  // time 0: the session's start
  EXPECT_EQ(Arg(*t.Named("load")[0], "bytes"), std::to_string(bytes.size()));

  const std::vector<const Json*> runs = t.Named("run");
  ASSERT_EQ(runs.size(), static_cast<size_t>(kRuns));
  const std::map<std::string, std::string> ops = {
      {"add", "Add"}, {"sigmoid", "Sigmoid"}, {"mul", "Mul"}};
  const std::map<std::string, std::string> in_shapes = {
      {"add", "[2,3],[1]"}, {"sigmoid", "[2,3]"}, {"mul", "[2,3],[1]"}};
  for (int r = 0; r < kRuns; ++r) {
    const Json& run = *runs[static_cast<size_t>(r)];
    EXPECT_EQ(run.Str("cat"), "session");
    EXPECT_EQ(Arg(run, "run"), std::to_string(r));
    EXPECT_GE(Num(run, "ts"), Num(*t.Named("plan_memory")[0], "ts"));
    for (const auto& [name, op] : ops) {
      std::vector<const Json*> mine;
      for (const Json* e : t.Named(name))
        if (Arg(*e, "run") == std::to_string(r)) mine.push_back(e);
      ASSERT_EQ(mine.size(), 1u) << name << " run " << r;
      const Json& e = *mine[0];
      EXPECT_EQ(e.Str("cat"), "node");
      EXPECT_EQ(Arg(e, "ep"), "CPU");
      EXPECT_EQ(Arg(e, "device").rfind("cpu", 0), 0u) << Arg(e, "device");
      EXPECT_EQ(Arg(e, "op_type"), op);
      EXPECT_EQ(Arg(e, "input_shapes"), in_shapes.at(name));
      EXPECT_EQ(Arg(e, "output_shapes"), "[2,3]");
      EXPECT_FALSE(HasArg(e, "parent"));
      EXPECT_TRUE(Within(e, run)) << name << " is not inside run " << r;
    }
  }
  EXPECT_EQ(t.Cat("node").size(), static_cast<size_t>(3 * kRuns));
  EXPECT_TRUE(t.Cat("copy").empty());  // all on the CPU: nothing moves between memories
  EXPECT_EQ(t.root.Find("otherData")->Str("runs"), std::to_string(kRuns));

  // Profiling ended: later runs record nothing, ending again is an error, and releasing the
  // session does not write the file again.
  s.Run({"x"}, {&x});
  try {
    s.EndProfiling();
    ADD_FAILURE() << "EndProfiling succeeded twice";
  } catch (const nxrt::Exception& e) {
    EXPECT_EQ(e.code(), NX_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("ended already"), std::string::npos) << e.what();
  }
}

TEST(Profiler, ReleasingTheSessionWritesTheProfile) {
  const std::string path = ProfilePath("released.json");
  {
    nxrt::Env env(NX_LOG_ERROR);
    const std::string file = nxrt::test::WriteTempFile("chain.onnx", Chain());
    nxrt::SessionOptions o;
    o.SetProfileFile(path);
    nxrt::Session s(env, file, &o);
    nxrt::Value x = Input23();
    s.Run({"x"}, {&x});
  }
  Trace t;
  LoadTrace(path, t);
  if (HasFatalFailure()) return;
  ASSERT_EQ(t.Named("run").size(), 1u);
  ASSERT_EQ(t.Named("load").size(), 1u);
  EXPECT_NE(Arg(*t.Named("load")[0], "path").find("chain.onnx"), std::string::npos);
  EXPECT_EQ(t.Cat("node").size(), 3u);
}

TEST(Profiler, EpEventsFromTheKernelContextAreEscapedAndNested) {
  nxrt::Env env(NX_LOG_ERROR);
  env.RegisterEpLibrary("probe",
                        std::string(NXRT_TEST_EP_DIR) + "/libnxrt_test_profile_event_ep.so");
  // x -> Relu (ProfileProbe) -> Sigmoid (CPU, fallback) -> y
  const std::string bytes = Model(Graph(
      "probe", {MakeNode("Relu", {"x"}, {"r"}, "relu"), MakeNode("Sigmoid", {"r"}, {"y"}, "sig")},
      {Info("x", F, {2, 3})}, {Info("y", F, {2, 3})}));
  const std::string path = ProfilePath("probe.json");
  nxrt::SessionOptions o;
  o.AppendEp("ProfileProbe");
  o.SetProfileFile(path);
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  nxrt::Value x = Input23();
  s.Run({"x"}, {&x});
  s.Run({"x"}, {&x});
  s.EndProfiling();

  Trace t;
  LoadTrace(path, t);
  if (HasFatalFailure()) return;
  const std::vector<const Json*> probes = t.Named("probe:compute");
  ASSERT_EQ(probes.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const Json& p = *probes[static_cast<size_t>(r)];
    EXPECT_EQ(p.Str("cat"), "ep");
    EXPECT_EQ(Arg(p, "elements"), "6");
    EXPECT_EQ(Arg(p, "node"), "relu");
    EXPECT_EQ(Arg(p, "ep"), "ProfileProbe");
    EXPECT_EQ(Arg(p, "run"), std::to_string(r));
    const Json* node = nullptr;
    for (const Json* e : t.Named("relu"))
      if (Arg(*e, "run") == std::to_string(r)) node = e;
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(Arg(*node, "ep"), "ProfileProbe");
    EXPECT_EQ(Arg(*node, "device").rfind("cpu", 0), 0u) << Arg(*node, "device");
    EXPECT_TRUE(Within(p, *node)) << "the EP's event is not inside its node";
  }
  // Names and arguments that need escaping survive the round trip.
  const std::vector<const Json*> quoted = t.Named("probe:\"quoted\"\n");
  ASSERT_EQ(quoted.size(), 2u);
  EXPECT_EQ(Arg(*quoted[0], "note"), "tab\there \\ \x01 caf\xc3\xa9");
  EXPECT_EQ(Num(*quoted[0], "dur"), 0);
  for (const Json* e : t.Named("sig")) EXPECT_EQ(Arg(*e, "ep"), "CPU");
}

TEST(Profiler, ControlFlowBodyNodesAreRecordedInsideTheirNode) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = NestedModel();
  const std::string path = ProfilePath("nested.json");
  nxrt::SessionOptions o;
  o.SetProfileFile(path);
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  nxrt::Value n = Scalar64(3), acc0 = Vec1(0), step = Vec1(1);
  std::vector<nxrt::Value> out = s.Run({"n", "acc0", "step"}, {&n, &acc0, &step});
  EXPECT_FLOAT_EQ(*out[0].data<float>(), 3.0f);  // +2, -1, +2
  s.EndProfiling();

  Trace t;
  LoadTrace(path, t);
  if (HasFatalFailure()) return;
  ASSERT_EQ(t.Named("run").size(), 1u);
  const Json& run = *t.Named("run")[0];
  // The main graph: the outer Loop alone.
  std::vector<const Json*> top;
  for (const Json* e : t.Cat("node"))
    if (!HasArg(*e, "parent")) top.push_back(e);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(Arg(*top[0], "op_type"), "Loop");
  const std::string loop = top[0]->Str("name");
  // The outer body runs 3 times: its Mod node once per iteration, inside the Loop's event.
  const std::vector<const Json*> mods = t.Named("Mod_parity");
  ASSERT_EQ(mods.size(), 3u);
  for (const Json* m : mods) {
    EXPECT_EQ(Arg(*m, "parent"), loop);
    EXPECT_EQ(Arg(*m, "run"), "0");
    EXPECT_EQ(Arg(*m, "input_shapes"), "[],[]");
    EXPECT_TRUE(Within(*m, *top[0]));
  }
  // Two levels down: the else branch (odd i) once, the then branch's inner Loop twice, each
  // inside an If event.
  const std::vector<const Json*> subs = t.Named("Sub_minus");
  ASSERT_EQ(subs.size(), 1u);
  const std::vector<const Json*> ifs = t.Named("If_acc_out");
  ASSERT_EQ(ifs.size(), 3u);
  EXPECT_EQ(Arg(*subs[0], "parent"), "If_acc_out");
  bool inside = false;
  for (const Json* f : ifs) inside = inside || Within(*subs[0], *f);
  EXPECT_TRUE(inside);
  size_t inner_adds = 0;
  for (const Json* e : t.Named("Add_v_out")) {
    EXPECT_EQ(Arg(*e, "parent"), "Loop_inner_out");
    ++inner_adds;
  }
  EXPECT_EQ(inner_adds, 4u);  // 2 even iterations x 2 inner iterations
  for (const Json* e : t.Cat("node")) EXPECT_TRUE(Within(*e, run)) << e->Str("name");
}

TEST(Profiler, EndProfilingWithoutAProfileFileIsAnError) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = Chain();
  nxrt::Session s(env, bytes.data(), bytes.size());
  try {
    s.EndProfiling();
    ADD_FAILURE() << "EndProfiling succeeded on a session that does not profile";
  } catch (const nxrt::Exception& e) {
    EXPECT_EQ(e.code(), NX_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("not profiling"), std::string::npos) << e.what();
  }
  // The C API checks its arguments.
  NxStatus* st = NxSession_EndProfiling(nullptr);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(NxStatus_GetCode(st), NX_INVALID_ARGUMENT);
  NxStatus_Release(st);
  NxSessionOptions* raw = nullptr;
  ASSERT_EQ(NxSessionOptions_Create(&raw), nullptr);
  st = NxSessionOptions_SetProfileFile(raw, nullptr);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(NxStatus_GetCode(st), NX_INVALID_ARGUMENT);
  NxStatus_Release(st);
  NxSessionOptions_Release(raw);
}

TEST(Profiler, UnwritablePathsFailClearly) {
  nxrt::Env env(NX_LOG_ERROR);
  const std::string bytes = Chain();
  // A folder that does not exist: session creation fails, naming the file.
  {
    nxrt::SessionOptions o;
    o.SetProfileFile(ProfilePath("missing/dir/p.json"));
    try {
      nxrt::Session s(env, bytes.data(), bytes.size(), &o);
      ADD_FAILURE() << "a session was created with an unwritable profile file";
    } catch (const nxrt::Exception& e) {
      EXPECT_EQ(e.code(), NX_INVALID_ARGUMENT);
      const std::string m = e.what();
      EXPECT_NE(m.find("cannot write the profile file"), std::string::npos) << m;
      EXPECT_NE(m.find("missing/dir/p.json"), std::string::npos) << m;
    }
  }
  // Writable at creation, gone at the end: EndProfiling reports it, the session lives on.
  const std::filesystem::path dir = ProfilePath("vanishing");
  std::filesystem::create_directories(dir);
  nxrt::SessionOptions o;
  o.SetProfileFile((dir / "p.json").string());
  nxrt::Session s(env, bytes.data(), bytes.size(), &o);
  nxrt::Value x = Input23();
  s.Run({"x"}, {&x});
  std::filesystem::remove_all(dir);
  try {
    s.EndProfiling();
    ADD_FAILURE() << "EndProfiling wrote into a removed folder";
  } catch (const nxrt::Exception& e) {
    EXPECT_EQ(e.code(), NX_FAIL);
    EXPECT_NE(std::string(e.what()).find("cannot write the profile file"), std::string::npos)
        << e.what();
  }
  std::vector<nxrt::Value> y = s.Run({"x"}, {&x});  // still runs
  EXPECT_EQ(y.size(), 1u);
}

TEST(Profiler, CliWritesTheProfileAndCountsItsEvents) {
  const std::string model = nxrt::test::WriteTempFile("chain.onnx", Chain());
  const std::string path = ProfilePath("cli.json");
  const std::string cli = std::string(NXRT_TEST_EP_DIR) + "/../bin/nxrt";
  const std::string cmd =
      "'" + cli + "' run '" + model + "' --repeat 2 --profile '" + path + "' 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out;
  Trace t;
  LoadTrace(path, t);
  if (HasFatalFailure()) return;
  // One warm-up run and two timed ones.
  EXPECT_EQ(t.Named("run").size(), 3u);
  const std::string line = "profile: " + path + " (" + std::to_string(t.events.size()) + " events)";
  EXPECT_NE(out.find(line + "\n"), std::string::npos) << out;
}

}  // namespace
