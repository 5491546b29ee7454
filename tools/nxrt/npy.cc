#include "nxrt/npy.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace nxrt::cli {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& why) {
  throw Exception(NX_INVALID_ARGUMENT, path + ": " + why);
}

struct Descr {
  const char* code;
  NxElementType type;
  size_t item_size;
};
constexpr Descr kDescrs[] = {
    {"f4", NX_TYPE_FLOAT, 4},     {"f8", NX_TYPE_DOUBLE, 8},       {"f2", NX_TYPE_FLOAT16, 2},
    {"i1", NX_TYPE_INT8, 1},      {"i2", NX_TYPE_INT16, 2},        {"i4", NX_TYPE_INT32, 4},
    {"i8", NX_TYPE_INT64, 8},     {"u1", NX_TYPE_UINT8, 1},        {"u2", NX_TYPE_UINT16, 2},
    {"u4", NX_TYPE_UINT32, 4},    {"u8", NX_TYPE_UINT64, 8},       {"b1", NX_TYPE_BOOL, 1},
    {"c8", NX_TYPE_COMPLEX64, 8}, {"c16", NX_TYPE_COMPLEX128, 16},
};

const Descr& DescrFromText(const std::string& path, const std::string& descr) {
  if (descr.size() < 2) Fail(path, "unsupported dtype '" + descr + "'");
  const char order = descr[0];
  if (order != '<' && order != '|' && order != '=' && order != '>')
    Fail(path, "unsupported dtype '" + descr + "'");
  const std::string code = descr.substr(1);
  for (const auto& d : kDescrs) {
    if (code != d.code) continue;
    if (order == '>' && d.item_size > 1) Fail(path, "big-endian arrays are not supported");
    return d;
  }
  Fail(path, "unsupported dtype '" + descr + "'");
}

const char* DescrFromType(NxElementType type) {
  switch (type) {
    case NX_TYPE_FLOAT: return "<f4";
    case NX_TYPE_DOUBLE: return "<f8";
    case NX_TYPE_FLOAT16: return "<f2";
    case NX_TYPE_INT8: return "|i1";
    case NX_TYPE_INT16: return "<i2";
    case NX_TYPE_INT32: return "<i4";
    case NX_TYPE_INT64: return "<i8";
    case NX_TYPE_UINT8: return "|u1";
    case NX_TYPE_UINT16: return "<u2";
    case NX_TYPE_UINT32: return "<u4";
    case NX_TYPE_UINT64: return "<u8";
    case NX_TYPE_BOOL: return "|b1";
    case NX_TYPE_COMPLEX64: return "<c8";
    case NX_TYPE_COMPLEX128: return "<c16";
    case NX_TYPE_BFLOAT16: return "<V2";  // numpy has no bfloat16: raw 2-byte records
    default: return nullptr;
  }
}

// The header is a Python dict literal with exactly the keys 'descr' (a string), 'fortran_order'
// (True/False) and 'shape' (a tuple of non-negative integers), as numpy writes it. Anything else
// is refused: a lenient parser is how a 144-byte file came to declare 8 GiB.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), s_(text) {}

  void Parse(std::string& descr, bool& fortran_order, std::vector<int64_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    Expect('{');
    while (!Peek('}')) {
      const std::string key = String();
      Expect(':');
      if (key == "descr" && !have_descr) {
        descr = String();
        have_descr = true;
      } else if (key == "fortran_order" && !have_order) {
        fortran_order = Bool();
        have_order = true;
      } else if (key == "shape" && !have_shape) {
        shape = Tuple();
        have_shape = true;
      } else {
        Bad("unexpected or repeated key '" + key + "'");
      }
      if (!Peek('}')) Expect(',');
    }
    Expect('}');
    SkipSpace();
    if (pos_ != s_.size()) Bad("text after the dict");
    if (!have_descr || !have_order || !have_shape)
      Bad("'descr', 'fortran_order' and 'shape' are all required");
  }

 private:
  [[noreturn]] void Bad(const std::string& why) { Fail(path_, "malformed .npy header: " + why); }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) ++pos_;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void Expect(char c) {
    if (!Peek(c)) Bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string String() {
    SkipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) Bad("expected a string");
    const char quote = s_[pos_++];
    const size_t end = s_.find(quote, pos_);
    if (end == std::string::npos || end - pos_ > 64) Bad("unterminated or long string");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  bool Bool() {
    SkipSpace();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const size_t n = std::strlen(word);
      if (s_.compare(pos_, n, word) == 0) {
        pos_ += n;
        return value;
      }
    }
    Bad("fortran_order must be True or False");
  }
  std::vector<int64_t> Tuple() {
    std::vector<int64_t> dims;
    Expect('(');
    while (!Peek(')')) {
      size_t start = pos_;
      int64_t v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        if (v > (INT64_MAX - 9) / 10) Bad("shape entry too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start) Bad("shape entries must be non-negative integers");
      // numpy writes Python ints; old writers add an 'L' suffix.
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;
      dims.push_back(v);
      if (dims.size() > 64) Bad("more than 64 dimensions");
      if (!Peek(')')) Expect(',');
    }
    Expect(')');
    return dims;
  }

  const std::string& path_;
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

Value ReadNpy(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) Fail(path, "cannot open: " + std::string(strerror(errno)));
  if (!S_ISREG(st.st_mode)) Fail(path, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(path, "cannot open");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) Fail(path, "not a .npy file");
  uint64_t header_len = 0;
  uint64_t prefix = 0;
  if (magic[6] == 1 && magic[7] == 0) {
    uint8_t b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) Fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8);
    prefix = 10;
  } else if ((magic[6] == 2 || magic[6] == 3) && magic[7] == 0) {
    uint8_t b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) Fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
    prefix = 12;
  } else {
    Fail(path, "unsupported .npy version " + std::to_string(static_cast<uint8_t>(magic[6])) + "." +
                   std::to_string(static_cast<uint8_t>(magic[7])));
  }
  if (header_len > (1u << 16)) Fail(path, "header too large");
  if (prefix + header_len > file_size) Fail(path, "truncated header");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len)))
    Fail(path, "truncated header");

  std::string descr_text;
  bool fortran_order = false;
  std::vector<int64_t> dims;
  HeaderParser(path, header).Parse(descr_text, fortran_order, dims);
  const Descr& descr = DescrFromText(path, descr_text);
  if (fortran_order) Fail(path, "Fortran-order arrays are not supported");

  // The data must be in the file before anything is allocated for it.
  uint64_t count = 1;
  for (int64_t d : dims) {
    const uint64_t u = static_cast<uint64_t>(d);
    if (u != 0 && count > UINT64_MAX / u) Fail(path, "shape has too many elements");
    count *= u;
  }
  if (count > UINT64_MAX / descr.item_size) Fail(path, "shape has too many elements");
  const uint64_t bytes = count * descr.item_size;
  const uint64_t available = file_size - prefix - header_len;
  if (available != bytes) {
    Fail(path, "the shape needs " + std::to_string(bytes) + " bytes of data, the file has " +
                   std::to_string(available));
  }
  Value v = Value::Tensor(descr.type, dims);
  if (bytes > 0 &&
      !in.read(static_cast<char*>(NxValue_GetData(v.get())), static_cast<std::streamsize>(bytes))) {
    Fail(path, "file is shorter than its shape says");
  }
  return v;
}

void WriteNpy(const std::string& path, const Value& value) {
  const char* descr = DescrFromType(value.type());
  if (descr == nullptr) {
    throw Exception(NX_NOT_IMPLEMENTED, path + ": cannot write element type " +
                                            Nx_ElementTypeName(value.type()) + " as .npy");
  }
  std::vector<int64_t> dims = value.shape();
  std::string shape = "(";
  for (size_t i = 0; i < dims.size(); ++i) shape += std::to_string(dims[i]) + (dims.size() == 1 || i + 1 < dims.size() ? "," : "");
  shape += ")";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Exception(NX_INVALID_ARGUMENT, path + ": cannot create file");
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lb, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  size_t elem = 0;
  switch (value.type()) {
    case NX_TYPE_FLOAT: case NX_TYPE_INT32: case NX_TYPE_UINT32: elem = 4; break;
    case NX_TYPE_DOUBLE: case NX_TYPE_INT64: case NX_TYPE_UINT64: case NX_TYPE_COMPLEX64: elem = 8; break;
    case NX_TYPE_COMPLEX128: elem = 16; break;
    case NX_TYPE_INT16: case NX_TYPE_UINT16: case NX_TYPE_FLOAT16: case NX_TYPE_BFLOAT16: elem = 2; break;
    default: elem = 1; break;
  }
  out.write(static_cast<const char*>(NxValue_GetConstData(value.get())),
            static_cast<std::streamsize>(elem * value.size()));
  if (!out) throw Exception(NX_FAIL, path + ": write failed");
}

}  // namespace nxrt::cli
