// Weight pre-packing through the ABI: once per weight per session, shared between sessions of
// one env (packed once in total, its memory counted once), released initializers, and the
// alias / in-place hints of kernel definitions. Uses the "Packing" test EP.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <nxrt/nxrt.hpp>
#include <random>

#include "test_util.h"

namespace {

using nxrt::test::MakeNode;

std::string PackingLib() { return std::string(NXRT_TEST_EP_DIR) + "/libnxrt_test_packing_ep.so"; }

// Reads a counter of the Packing EP. The library stays loaded while the env has it registered;
// dlopen here only takes another reference.
long long Counter(const char* name) {
  void* h = dlopen(PackingLib().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return -2;
  auto fn = reinterpret_cast<long long (*)(const char*)>(dlsym(h, "PackingEp_Counter"));
  long long v = fn ? fn(name) : -3;
  dlclose(h);
  return v;
}

// y = x[2,4] @ w[4,3] (and, with `twice`, z = x @ w through a second MatMul node).
std::string MatMulModel(const std::vector<float>& w, bool twice) {
  onnx::ModelProto m =
      nxrt::test::MakeModel({MakeNode("MatMul", {"x", "w"}, {"y"}, "mm")}, {"x"}, {"y"}, {2, 4});
  auto* g = m.mutable_graph();
  g->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(3);
  *g->add_initializer() = nxrt::test::MakeFloatTensor("w", {4, 3}, w);
  if (twice) {
    *g->add_node() = MakeNode("MatMul", {"x", "w"}, {"z"}, "mm2");
    *g->add_output() = g->output(0);
    g->mutable_output(1)->set_name("z");
  }
  return nxrt::test::Serialize(m);
}

std::vector<float> Reference(const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<float> y(6, 0.0f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) y[i * 3 + j] += x[i * 4 + k] * w[k * 3 + j];
  return y;
}

void ExpectMatMul(nxrt::Session& s, std::vector<float> x, const std::vector<float>& w) {
  const int64_t dims[] = {2, 4};
  auto in = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, x.data(), x.size() * sizeof(float));
  auto out = s.Run({"x"}, {&in});
  std::vector<float> ref = Reference(x, w);
  for (auto& y : out) {
    ASSERT_EQ(y.size(), 6u);
    for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(y.data<float>()[i], ref[i], 1e-5f);
  }
}

nxrt::SessionOptions PackingOptions(bool share = true) {
  nxrt::SessionOptions o;
  o.AppendEp("Packing");
  if (!share) o.SetConfig("session.share_prepacked_weights", "0");
  return o;
}

std::vector<float> RandomWeights(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> w(12);
  for (float& v : w) v = u(rng);
  return w;
}

TEST(PrePack, OncePerWeightPerSessionAndOnceForTwoSessionsSharingIt) {
  nxrt::Env env;
  env.RegisterEpLibrary("packing", PackingLib());
  const auto w = RandomWeights(1);
  const std::string model = MatMulModel(w, /*twice=*/true);
  const long long calls0 = Counter("prepack");
  auto opts = PackingOptions();
  {
    nxrt::Session a(env, model.data(), model.size(), &opts);
    // Two MatMul nodes read w: packed once, the second node takes the shared copy.
    EXPECT_EQ(Counter("prepack") - calls0, 1);
    EXPECT_EQ(a.statistic("prepack.calls"), 1);
    EXPECT_EQ(a.statistic("prepack.weights"), 2);
    EXPECT_EQ(a.statistic("prepack.shared_hits"), 1);
    EXPECT_EQ(a.statistic("initializers.released"), 1);  // w: every consumer packed it
    EXPECT_EQ(env.statistic("prepack.shared_weights"), 1);
    EXPECT_EQ(env.statistic("prepack.shared_bytes"), 12 * 4);
    ExpectMatMul(a, {1, 2, 3, 4, -1, -2, -3, -4}, w);

    nxrt::Session b(env, model.data(), model.size(), &opts);
    EXPECT_EQ(Counter("prepack") - calls0, 1) << "the second session must not pack again";
    EXPECT_EQ(b.statistic("prepack.calls"), 0);
    EXPECT_EQ(b.statistic("prepack.shared_hits"), 2);
    // Memory accounting shows the shared packing once.
    EXPECT_EQ(env.statistic("prepack.shared_weights"), 1);
    EXPECT_EQ(env.statistic("prepack.shared_bytes"), 12 * 4);
    EXPECT_EQ(env.statistic("prepack.bytes_in_use"), 12 * 4);
    ExpectMatMul(b, {0.5f, 0, 1, 2, 3, -1, 4, 2}, w);
    ExpectMatMul(a, {0.5f, 0, 1, 2, 3, -1, 4, 2}, w);
  }
  // Both sessions gone: the shared packing is freed.
  EXPECT_EQ(env.statistic("prepack.shared_weights"), 0);
  EXPECT_EQ(env.statistic("prepack.bytes_in_use"), 0);
}

// An initializer is freed as soon as its last consumer packed it, and never while a consumer
// that reads it unpacked (here an Add with a graph input, on the CPU EP, after the packing
// MatMul) still needs it.
TEST(PrePack, AWeightAnotherNodeReadsUnpackedIsKept) {
  nxrt::Env env;
  env.RegisterEpLibrary("packing", PackingLib());
  const auto w = RandomWeights(4);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(MatMulModel(w, /*twice=*/false)));
  auto* g = m.mutable_graph();
  *g->add_node() = MakeNode("Add", {"w", "d"}, {"w_plus_d"}, "add");
  for (const char* name : {"d", "w_plus_d"}) {
    auto* v = std::string(name) == "d" ? g->add_input() : g->add_output();
    *v = g->input(0);
    v->set_name(name);
    auto* shape = v->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->mutable_dim(0)->set_dim_value(4);
    shape->mutable_dim(1)->set_dim_value(3);
  }
  const std::string model = nxrt::test::Serialize(m);
  auto opts = PackingOptions();
  opts.AppendEp("CPU");
  nxrt::Session s(env, model.data(), model.size(), &opts);
  EXPECT_EQ(s.statistic("prepack.weights"), 1);
  EXPECT_EQ(s.statistic("initializers.released"), 0);
  std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, -4}, d(12);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<float>(i);
  const int64_t x_dims[] = {2, 4}, d_dims[] = {4, 3};
  auto xv = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, x_dims, x.data(), x.size() * sizeof(float));
  auto dv = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, d_dims, d.data(), d.size() * sizeof(float));
  auto out = s.Run({"x", "d"}, {&xv, &dv});
  ASSERT_EQ(out.size(), 2u);
  const std::vector<float> ref = Reference(x, w);
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(out[0].data<float>()[i], ref[i], 1e-5f);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(out[1].data<float>()[i], w[i] + d[i]);
}

TEST(PrePack, DifferentWeightsAreNotShared) {
  nxrt::Env env;
  env.RegisterEpLibrary("packing", PackingLib());
  const auto w1 = RandomWeights(2), w2 = RandomWeights(3);
  const std::string m1 = MatMulModel(w1, false), m2 = MatMulModel(w2, false);
  auto opts = PackingOptions();
  nxrt::Session a(env, m1.data(), m1.size(), &opts);
  nxrt::Session b(env, m2.data(), m2.size(), &opts);
  EXPECT_EQ(a.statistic("prepack.calls"), 1);
  EXPECT_EQ(b.statistic("prepack.calls"), 1);
  EXPECT_EQ(env.statistic("prepack.shared_weights"), 2);
  ExpectMatMul(a, {1, 0, 0, 0, 0, 1, 0, 0}, w1);
  ExpectMatMul(b, {1, 0, 0, 0, 0, 1, 0, 0}, w2);
}

TEST(PrePack, WithoutSharingEachSessionOwnsItsPacking) {
  nxrt::Env env;
  env.RegisterEpLibrary("packing", PackingLib());
  const auto w = RandomWeights(4);
  const std::string model = MatMulModel(w, false);
  auto opts = PackingOptions(/*share=*/false);
  const long long calls0 = Counter("prepack");
  nxrt::Session a(env, model.data(), model.size(), &opts);
  nxrt::Session b(env, model.data(), model.size(), &opts);
  EXPECT_EQ(Counter("prepack") - calls0, 2);
  EXPECT_EQ(env.statistic("prepack.shared_weights"), 0);
  EXPECT_EQ(env.statistic("prepack.bytes_in_use"), 2 * 12 * 4);  // two owned copies
  ExpectMatMul(a, {1, 2, 3, 4, 5, 6, 7, 8}, w);
  ExpectMatMul(b, {1, 2, 3, 4, 5, 6, 7, 8}, w);
}

TEST(PrePack, NonConstantWeightsAreNotPacked) {
  nxrt::Env env;
  env.RegisterEpLibrary("packing", PackingLib());
  onnx::ModelProto m =
      nxrt::test::MakeModel({MakeNode("MatMul", {"x", "w"}, {"y"})}, {"x", "w"}, {"y"}, {2, 2});
  const std::string bytes = nxrt::test::Serialize(m);
  auto opts = PackingOptions();
  nxrt::Session s(env, bytes.data(), bytes.size(), &opts);
  EXPECT_EQ(s.statistic("prepack.calls"), 0);
  std::vector<float> x = {1, 2, 3, 4}, w = {1, 0, 0, 1};
  const int64_t dims[] = {2, 2};
  auto xv = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, x.data(), 16);
  auto wv = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, w.data(), 16);
  auto out = s.Run({"x", "w"}, {&xv, &wv});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].data<float>()[i], x[i]);
}

// t1 = x + c; t2 = t1 + c (t1 dies here: in place); y = Identity(t2) (alias: no copy).
TEST(KernelHints, InPlaceAndAliasOutputsReuseBuffers) {
  nxrt::Env env;
  env.RegisterEpLibrary("packing", PackingLib());
  onnx::ModelProto m = nxrt::test::MakeModel(
      {MakeNode("Add", {"x", "c"}, {"t1"}), MakeNode("Add", {"t1", "c"}, {"t2"}),
       MakeNode("Identity", {"t2"}, {"y"})},
      {"x"}, {"y"}, {4, 8});
  std::vector<float> c(32);
  for (int i = 0; i < 32; ++i) c[i] = 0.25f * i;
  *m.mutable_graph()->add_initializer() = nxrt::test::MakeFloatTensor("c", {4, 8}, c);
  const std::string bytes = nxrt::test::Serialize(m);
  auto opts = PackingOptions();
  nxrt::Session s(env, bytes.data(), bytes.size(), &opts);
  const long long inplace0 = Counter("inplace"), alias0 = Counter("alias");
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i) - 7.0f;
  const int64_t dims[] = {4, 8};
  auto xv = nxrt::Value::WrapTensor(NX_TYPE_FLOAT, dims, x.data(), x.size() * 4);
  for (int run = 0; run < 3; ++run) {
    auto out = s.Run({"x"}, {&xv});
    for (int i = 0; i < 32; ++i) ASSERT_EQ(out[0].data<float>()[i], x[i] + 2 * c[i]);
    // x is the caller's: never overwritten.
    EXPECT_EQ(x[5], -2.0f);
  }
  EXPECT_EQ(Counter("inplace") - inplace0, 3);  // the second Add, once per run
  EXPECT_EQ(Counter("alias") - alias0, 3);      // the Identity, once per run
}

}  // namespace
