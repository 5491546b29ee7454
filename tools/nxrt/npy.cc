#include "nxrt/npy.h"

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
};
constexpr Descr kDescrs[] = {
    {"f4", NX_TYPE_FLOAT},  {"f8", NX_TYPE_DOUBLE}, {"f2", NX_TYPE_FLOAT16}, {"i1", NX_TYPE_INT8},
    {"i2", NX_TYPE_INT16},  {"i4", NX_TYPE_INT32},  {"i8", NX_TYPE_INT64},   {"u1", NX_TYPE_UINT8},
    {"u2", NX_TYPE_UINT16}, {"u4", NX_TYPE_UINT32}, {"u8", NX_TYPE_UINT64},  {"b1", NX_TYPE_BOOL},
    {"c8", NX_TYPE_COMPLEX64}, {"c16", NX_TYPE_COMPLEX128},
};

NxElementType TypeFromDescr(const std::string& path, const std::string& descr) {
  if (descr.size() < 2) Fail(path, "unsupported dtype '" + descr + "'");
  char order = descr[0];
  if (order == '>') Fail(path, "big-endian arrays are not supported");
  std::string code = descr.substr(1);
  for (const auto& d : kDescrs)
    if (code == d.code) return d.type;
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

// Value of `key` in the header dict, e.g. "'descr': '<f4'".
std::string Field(const std::string& path, const std::string& header, const std::string& key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) Fail(path, "header has no '" + key + "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) Fail(path, "malformed header");
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) Fail(path, "malformed header");
  if (header[start] == '\'') {
    size_t end = header.find('\'', start + 1);
    if (end == std::string::npos) Fail(path, "malformed header");
    return header.substr(start + 1, end - start - 1);
  }
  if (header[start] == '(') {
    size_t end = header.find(')', start);
    if (end == std::string::npos) Fail(path, "malformed header");
    return header.substr(start + 1, end - start - 1);
  }
  size_t end = header.find_first_of(",}", start);
  return header.substr(start, end - start);
}

}  // namespace

Value ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(path, "cannot open");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) Fail(path, "not a .npy file");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint8_t b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) Fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    uint8_t b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) Fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    Fail(path, "unsupported .npy version " + std::to_string(magic[6]));
  }
  if (header_len > (1u << 20)) Fail(path, "header too large");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) Fail(path, "truncated header");
  NxElementType type = TypeFromDescr(path, Field(path, header, "descr"));
  if (Field(path, header, "fortran_order").find("True") != std::string::npos) {
    Fail(path, "Fortran-order arrays are not supported");
  }
  std::vector<int64_t> dims;
  std::stringstream shape(Field(path, header, "shape"));
  std::string item;
  while (std::getline(shape, item, ',')) {
    size_t a = item.find_first_not_of(' ');
    if (a == std::string::npos) continue;
    try {
      dims.push_back(std::stoll(item.substr(a)));
    } catch (const std::exception&) {
      Fail(path, "bad shape entry '" + item + "'");
    }
  }
  Value v = Value::Tensor(type, dims);
  size_t bytes = v.size() * (type == NX_TYPE_FLOAT16 ? 2 : 0);
  switch (type) {
    case NX_TYPE_FLOAT: case NX_TYPE_INT32: case NX_TYPE_UINT32: bytes = v.size() * 4; break;
    case NX_TYPE_DOUBLE: case NX_TYPE_INT64: case NX_TYPE_UINT64: case NX_TYPE_COMPLEX64: bytes = v.size() * 8; break;
    case NX_TYPE_COMPLEX128: bytes = v.size() * 16; break;
    case NX_TYPE_INT16: case NX_TYPE_UINT16: case NX_TYPE_FLOAT16: bytes = v.size() * 2; break;
    default: bytes = v.size(); break;
  }
  if (bytes > 0 && !in.read(static_cast<char*>(NxValue_GetData(v.get())), static_cast<std::streamsize>(bytes))) {
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
