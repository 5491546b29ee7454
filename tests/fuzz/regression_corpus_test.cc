// The fuzzer's regression corpus (tests/fuzz/regressions) replayed in every build, the sanitizer
// suite included, and the values nxrt defines where C++ conversions would be undefined (NaN,
// infinities and out-of-range floats cast or quantised to integers).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nxrt/nxrt.hpp>
#include <string>
#include <vector>

#include "fuzz/session_harness.h"

namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

fs::path Regression(const std::string& name) { return fs::path(NXRT_FUZZ_REGRESSIONS_DIR) / name; }

template <class Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const nxrt::Exception& e) {
    return e.what();
  }
  return "";
}

// Output `name` of a model without inputs, as a vector of T.
template <class T>
std::vector<T> Output(std::vector<nxrt::Value>& outs, nxrt::Session& s, const std::string& name) {
  for (size_t i = 0; i < s.output_count(); ++i) {
    if (s.output_name(i) != name) continue;
    const T* p = outs[i].data<T>();
    return std::vector<T>(p, p + outs[i].size());
  }
  ADD_FAILURE() << "no output " << name;
  return {};
}

TEST(FuzzRegressions, EveryFileRunsLikeTheFuzzerWithoutCrashing) {
  nxrt::Env env(NX_LOG_FATAL);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(NXRT_FUZZ_REGRESSIONS_DIR)) {
    if (!entry.is_regular_file()) continue;
    SCOPED_TRACE(entry.path().filename().string());
    std::string bytes = ReadFile(entry.path());
    nxrt_fuzz::CreateAndRun(env.get(), reinterpret_cast<const uint8_t*>(bytes.data()),
                            bytes.size());
    ++files;
  }
  EXPECT_GT(files, 0u);
}

// HOSTILE in make_regressions.py: NaN, inf, -inf, 1e30, -1e30, 3e9, -3e9, 2.5, -0.0, 300.0.
TEST(FuzzRegressions, CastOfNanInfAndOutOfRangeFloatsToIntegersIsDefined) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, Regression("cast_nan_to_int.onnx").string());
  auto outs = s.Run({}, {});
  constexpr int32_t i32max = std::numeric_limits<int32_t>::max();
  constexpr int32_t i32min = std::numeric_limits<int32_t>::min();
  constexpr int64_t i64max = std::numeric_limits<int64_t>::max();
  constexpr int64_t i64min = std::numeric_limits<int64_t>::min();
  // NaN -> 0; inf and values beyond int64 saturate; in-range values wrap like numpy (via int64).
  EXPECT_EQ(Output<int8_t>(outs, s, "y_i8"),
            (std::vector<int8_t>{0, 127, -128, 127, -128, 0, 0, 2, 0, 44}));
  EXPECT_EQ(Output<uint8_t>(outs, s, "y_u8"),
            (std::vector<uint8_t>{0, 255, 0, 255, 0, 0, 0, 2, 0, 44}));
  EXPECT_EQ(Output<int32_t>(outs, s, "y_i32"),
            (std::vector<int32_t>{0, i32max, i32min, i32max, i32min, i32max, i32min, 2, 0, 300}));
  EXPECT_EQ(Output<int32_t>(outs, s, "y_d_i32"), Output<int32_t>(outs, s, "y_i32"));
  EXPECT_EQ(Output<int64_t>(outs, s, "y_i64"),
            (std::vector<int64_t>{0, i64max, i64min, i64max, i64min, 3000000000, -3000000000, 2, 0,
                                  300}));
  std::vector<uint64_t> u64 = Output<uint64_t>(outs, s, "y_u64");
  ASSERT_EQ(u64.size(), 10u);
  EXPECT_EQ(u64[0], 0u);
  EXPECT_EQ(u64[1], std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(u64[5], 3000000000u);
  EXPECT_EQ(u64[6], uint64_t(0) - 3000000000u);  // negative values wrap, as in numpy
}

TEST(FuzzRegressions, CastOfNonFiniteStringsToIntegersIsDefined) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, Regression("cast_string_nan_to_int.onnx").string());
  auto outs = s.Run({}, {});
  constexpr int64_t i64max = std::numeric_limits<int64_t>::max();
  constexpr int64_t i64min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(Output<int64_t>(outs, s, "y"), (std::vector<int64_t>{0, i64max, i64min, 12}));
}

TEST(FuzzRegressions, QuantizeLinearSaturatesAndMapsNanToZero) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, Regression("quantize_linear_nan.onnx").string());
  auto outs = s.Run({}, {});
  // x / 0.5 = NaN, inf, -inf, 2e30, -2e30, 6e9, -6e9, 5, -0, 600
  EXPECT_EQ(Output<uint8_t>(outs, s, "y_u8"),
            (std::vector<uint8_t>{0, 255, 0, 255, 0, 255, 0, 5, 0, 255}));
  EXPECT_EQ(Output<int8_t>(outs, s, "y_i8"),  // zero point 3; NaN is 0, not the zero point
            (std::vector<int8_t>{0, 127, -128, 127, -128, 127, -128, 8, 3, 127}));
  // A zero scale: x / 0 is +-inf, or NaN for 0 (-0.0 / 0).
  EXPECT_EQ(Output<uint8_t>(outs, s, "y_u8_zero_scale"),
            (std::vector<uint8_t>{0, 255, 0, 255, 0, 255, 0, 255, 0, 255}));
  EXPECT_EQ(Output<int16_t>(outs, s, "y_i16"),  // zero point -7, the generic path
            (std::vector<int16_t>{0, 32767, -32768, 32767, -32768, 32767, -32768, -2, -7, 593}));
  constexpr int32_t i32max = std::numeric_limits<int32_t>::max();
  constexpr int32_t i32min = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(Output<int32_t>(outs, s, "y_i32"),  // zero point 1, rounded like the other types
            (std::vector<int32_t>{0, i32max, i32min, i32max, i32min, i32max, i32min, 6, 1, 601}));
}

TEST(FuzzRegressions, DynamicQuantizeLinearOfNanAndInfIsDefined) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, Regression("dynamic_quantize_linear_nan.onnx").string());
  auto outs = s.Run({}, {});
  std::vector<uint8_t> y = Output<uint8_t>(outs, s, "y");
  ASSERT_EQ(y.size(), 10u);
  EXPECT_EQ(y[0], 0u);  // NaN
}

TEST(FuzzRegressions, PowOfIntegerBaseWithNonFiniteResultIsDefined) {
  nxrt::Env env(NX_LOG_ERROR);
  nxrt::Session s(env, Regression("pow_int_base_float_exponent.onnx").string());
  auto outs = s.Run({}, {});
  constexpr int64_t i64max = std::numeric_limits<int64_t>::max();
  // 2 ** NaN, 0 ** -inf = inf, (-1) ** 0.5 = NaN, 3 ** 1e30 = inf
  EXPECT_EQ(Output<int64_t>(outs, s, "y"), (std::vector<int64_t>{0, i64max, 0, i64max}));
}

TEST(FuzzRegressions, ElementTypeAttributesOutsideTheEnumAreClearErrors) {
  nxrt::Env env(NX_LOG_FATAL);
  std::string err = ErrorOf([&] {
    nxrt::Session s(env, Regression("sequence_empty_bad_dtype.onnx").string());
    s.Run({}, {});
  });
  EXPECT_NE(err.find("attribute 'dtype' is 1000, which is not an element type"), std::string::npos)
      << err;
  for (const char* file :
       {"cast_bad_to.onnx", "eye_like_bad_dtype.onnx", "quantize_linear_bad_output_dtype.onnx"}) {
    err = ErrorOf([&] {
      nxrt::Session s(env, Regression(file).string());
      s.Run({}, {});
    });
    EXPECT_NE(err.find("which is not an element type"), std::string::npos) << file << ": " << err;
  }
}

// Found by the fuzzer: a Constant whose `value` attribute carries a string instead of a tensor
// made the CPU EP wrap a NULL tensor (UBSan: member access within null pointer).
TEST(FuzzRegressions, TensorAttributeWithoutATensorIsAClearError) {
  nxrt::Env env(NX_LOG_FATAL);
  std::string err = ErrorOf([&] {
    nxrt::Session s(env, Regression("constant_value_attribute_not_a_tensor.onnx").string());
  });
  EXPECT_NE(err.find("attribute 'value' is not a tensor"), std::string::npos) << err;
}

// Found by the fuzzer (timeout): an ngram index near 2^63 made the output's byte count wrap and
// the host's buffer pool round it up for ever. Negative indexes counted outside the output and a
// huge max_skip_count spun.
TEST(FuzzRegressions, TfIdfVectorizerRejectsOrBoundsHostileAttributes) {
  nxrt::Env env(NX_LOG_FATAL);
  auto error_of_run = [&](const char* file) {
    return ErrorOf([&] {
      nxrt::Session s(env, Regression(file).string());
      s.Run({}, {});
    });
  };
  std::string err = error_of_run("tfidf_negative_ngram_index.onnx");
  EXPECT_NE(err.find("ngram_indexes must be non-negative, got -5"), std::string::npos) << err;
  err = error_of_run("tfidf_huge_ngram_index.onnx");
  EXPECT_NE(err.find("allocate"), std::string::npos) << err;
  err = error_of_run("tfidf_ngram_index_overflows_buffer_pool.onnx");
  EXPECT_FALSE(err.empty());

  // x = 1 2 1 2 2 1, pool 1-grams {1, 2} -> outputs 0, 1 and the 2-gram (1, 2) -> output 2; with
  // skips up to 10^18, (1, 2) occurs at distances 1, 3, 4 (from position 0) and 1, 2 (from 2).
  nxrt::Session s(env, Regression("tfidf_huge_max_skip.onnx").string());
  auto outs = s.Run({}, {});
  EXPECT_EQ(Output<float>(outs, s, "y"), (std::vector<float>{3, 3, 5}));
}

}  // namespace
