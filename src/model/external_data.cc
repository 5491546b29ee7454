#include "model/external_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/error.h"

namespace nxrt {

namespace fs = std::filesystem;

struct ExternalDataResolver::Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr != nullptr && addr != MAP_FAILED) munmap(addr, size);
  }
};

namespace {

[[noreturn]] void Reject(const std::string& tensor_name, const std::string& reason) {
  Throw(NX_INVALID_MODEL, "external data of tensor '" + tensor_name + "': " + reason);
}

// True if `path` equals `dir` or lies inside it (both canonical).
bool IsInside(const fs::path& path, const fs::path& dir) {
  auto p = path.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++p) {
    if (p == path.end() || *p != *d) return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<ExternalDataResolver::Mapping> ExternalDataResolver::Map(
    const std::string& tensor_name, const std::string& location) {
  if (model_dir_.empty()) {
    Reject(tensor_name, "the model was loaded from memory, so external file '" + location +
                            "' cannot be resolved; load the model from its file");
  }
  if (location.empty()) Reject(tensor_name, "empty location");
  if (location.find('\0') != std::string::npos) Reject(tensor_name, "location contains a NUL byte");
  fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    Reject(tensor_name, "absolute location '" + location + "' is not allowed");
  }
  for (const auto& part : rel) {
    if (part == "..") Reject(tensor_name, "location '" + location + "' leaves the model's folder");
  }
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::path(model_dir_), ec);
  if (ec) Reject(tensor_name, "cannot resolve the model folder '" + model_dir_ + "'");
  fs::path full = fs::weakly_canonical(dir / rel, ec);
  if (ec) Reject(tensor_name, "cannot resolve location '" + location + "'");
  if (!IsInside(full, dir)) {
    Reject(tensor_name, "location '" + location + "' resolves outside the model's folder");
  }
  auto it = mappings_.find(full.string());
  if (it != mappings_.end()) return it->second;

  // O_NONBLOCK: a FIFO (or device) named as external data must not block open(); it is refused
  // just below. O_NOFOLLOW: the path was resolved above, a symlink swapped in since is refused.
  int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) Reject(tensor_name, "cannot open file '" + location + "'");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    Reject(tensor_name, "'" + location + "' is not a regular file");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(st.st_size);
  if (mapping->size > 0) {
    mapping->addr = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping->addr == MAP_FAILED) {
      close(fd);
      Reject(tensor_name, "cannot map file '" + location + "'");
    }
  }
  close(fd);
  mappings_.emplace(full.string(), mapping);
  return mapping;
}

ExternalDataResolver::Span ExternalDataResolver::Read(const std::string& tensor_name,
                                                      const std::string& location, int64_t offset,
                                                      int64_t length) {
  auto mapping = Map(tensor_name, location);
  if (offset < 0) Reject(tensor_name, "negative offset " + std::to_string(offset));
  uint64_t size = mapping->size;
  if (static_cast<uint64_t>(offset) > size) {
    Reject(tensor_name, "offset " + std::to_string(offset) + " is past the end of '" + location +
                            "' (" + std::to_string(size) + " bytes)");
  }
  uint64_t available = size - static_cast<uint64_t>(offset);
  uint64_t want = length < 0 ? available : static_cast<uint64_t>(length);
  if (want > available) {
    Reject(tensor_name, "offset " + std::to_string(offset) + " + length " + std::to_string(want) +
                            " exceeds the size of '" + location + "' (" + std::to_string(size) +
                            " bytes)");
  }
  Span span;
  span.data = static_cast<const uint8_t*>(mapping->addr) + offset;
  span.size = static_cast<size_t>(want);
  span.keep_alive = mapping;
  return span;
}

}  // namespace nxrt
