// `nxrt run --input NAME=FILE.npy` reads files users hand it: the header is parsed strictly and
// the data must be in the file before anything is allocated for it.
#include "nxrt/npy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "test_util.h"

namespace {

// A version 1.0 .npy file with `header` (padded as numpy pads it) and `data`.
std::string Npy(const std::string& header, const std::string& data, char major = 1) {
  std::string h = header;
  const size_t prefix = major == 1 ? 10 : 12;
  h.append((64 - (prefix + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + major + '\0';
  const size_t n = h.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) out += std::string(2, '\0');
  return out + h + data;
}

std::string ErrorReading(const std::string& name, const std::string& bytes) {
  const std::string path = nxrt::test::WriteTempFile(name, bytes);
  try {
    nxrt::cli::ReadNpy(path);
  } catch (const nxrt::Exception& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, ReadsWhatItWrites) {
  auto v = nxrt::Value::Tensor(NX_TYPE_INT64, std::vector<int64_t>{2, 3});
  for (size_t i = 0; i < 6; ++i) v.data<int64_t>()[i] = static_cast<int64_t>(i) - 2;
  const std::string path = nxrt::test::TempDir() + "/roundtrip.npy";
  nxrt::cli::WriteNpy(path, v);
  nxrt::Value back = nxrt::cli::ReadNpy(path);
  EXPECT_EQ(back.type(), NX_TYPE_INT64);
  EXPECT_EQ(back.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back.data<int64_t>()[5], 3);
  // Version 2.0, a scalar, double quotes and the keys in another order are numpy's too.
  float one = 1.5f;
  const std::string scalar = Npy("{\"shape\": (), 'fortran_order': False, 'descr': '<f4'}",
                                 std::string(reinterpret_cast<char*>(&one), 4), 2);
  const std::string p2 = nxrt::test::WriteTempFile("scalar.npy", scalar);
  EXPECT_FLOAT_EQ(*nxrt::cli::ReadNpy(p2).data<float>(), 1.5f);
}

TEST(Npy, AHugeShapeInATinyFileFailsAtOnceWithoutAllocating) {
  // 2^31 doubles (16 GiB) declared in a 128-byte file.
  const auto t0 = std::chrono::steady_clock::now();
  const std::string m =
      ErrorReading("huge.npy", Npy("{'descr': '<f8', 'fortran_order': False, 'shape': (65536, "
                                   "32768), }",
                                   "12345678"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_NE(m.find("needs 17179869184 bytes of data, the file has 8"), std::string::npos) << m;
  // A shape whose byte size wraps around 2^64.
  const std::string w = ErrorReading(
      "wrap.npy", Npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,"
                      " 8), }",
                      ""));
  EXPECT_NE(w.find("too many elements"), std::string::npos) << w;
}

TEST(Npy, MalformedFilesAreRefusedByName) {
  const std::string ok_head = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data(8, '\0');
  struct Case {
    const char* name;
    std::string bytes;
    const char* fragment;
  } cases[] = {
      {"magic.npy", "\x93NUMPZ\x01\x00\x10\x00{}", "not a .npy file"},
      {"version.npy", std::string("\x93NUMPY\x07\x00", 8) + "\x02", "unsupported .npy version 7.0"},
      {"trunc_header.npy", Npy(ok_head, data).substr(0, 30), "truncated header"},
      {"short_data.npy", Npy(ok_head, "1234"), "needs 8 bytes of data, the file has 4"},
      {"long_data.npy", Npy(ok_head, data + "x"), "needs 8 bytes of data, the file has 9"},
      {"fortran.npy", Npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data),
       "Fortran-order"},
      {"descr.npy", Npy("{'descr': '<U8', 'fortran_order': False, 'shape': (2,), }", data),
       "unsupported dtype '<U8'"},
      {"bigendian.npy", Npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data),
       "big-endian"},
      {"extra_key.npy",
       Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", data),
       "unexpected or repeated key 'x'"},
      {"no_shape.npy", Npy("{'descr': '<f4', 'fortran_order': False}", data), "are all required"},
      {"negative.npy", Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", data),
       "non-negative integers"},
      {"junk.npy", Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", data),
       "text after the dict"},
  };
  for (const Case& c : cases) {
    const std::string m = ErrorReading(c.name, c.bytes);
    EXPECT_NE(m.find(c.name), std::string::npos) << c.name << ": " << m;
    EXPECT_NE(m.find(c.fragment), std::string::npos) << c.name << ": " << m;
  }
  const std::string d = nxrt::test::TempDir();
  try {
    nxrt::cli::ReadNpy(d);
    FAIL() << "a directory was read as .npy";
  } catch (const nxrt::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
}

}  // namespace
