// External tensor data: files next to the model, referenced by relative location, offset and
// length. Paths that are absolute or leave the model's folder are rejected; offsets and lengths
// are checked against the file size. Files are memory-mapped once and shared.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace nxrt {

class ExternalDataResolver {
 public:
  // `model_dir` is the folder of the model file; empty when the model came from memory (then
  // any external reference is an error).
  explicit ExternalDataResolver(std::string model_dir) : model_dir_(std::move(model_dir)) {}

  struct Span {
    const uint8_t* data = nullptr;
    size_t size = 0;
    std::shared_ptr<void> keep_alive;  // the mapping
  };

  // The bytes [offset, offset+length) of `location`; length < 0 means "to the end of the file".
  // Throws NX_INVALID_MODEL with `tensor_name` and the reason on any violation.
  Span Read(const std::string& tensor_name, const std::string& location, int64_t offset,
            int64_t length);

 private:
  struct Mapping;
  std::shared_ptr<Mapping> Map(const std::string& tensor_name, const std::string& location);

  std::string model_dir_;
  std::map<std::string, std::shared_ptr<Mapping>> mappings_;
};

}  // namespace nxrt
