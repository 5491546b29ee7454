// Values: tensors (element type, shape, data), sequences and optionals. The struct behind the
// public opaque NxValue handle, so the C API and the plugin ABI pass it without translation.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nxrt/nxrt_types.h"

struct NxValue {
  NxValueKind kind = NX_VALUE_TENSOR;

  // ---- tensor ----
  NxElementType type = NX_TYPE_UNDEFINED;
  std::vector<int64_t> dims;
  size_t count = 0;                  // number of elements
  void* data = nullptr;              // non-string payload; may be borrowed
  std::shared_ptr<void> storage;     // keeps `data` alive when owned (null when borrowed)
  std::vector<std::string> strings;  // payload of string tensors
  // Where `data` lives; null = plain host memory. Device memory is never dereferenced by the host.
  const NxMemoryInfo* memory = nullptr;

  // ---- sequence (kind == SEQUENCE) ----
  NxElementType sequence_type = NX_TYPE_UNDEFINED;  // element type of the tensors it holds
  std::vector<std::shared_ptr<NxValue>> elements;

  // ---- optional (kind == OPTIONAL) ----
  std::shared_ptr<NxValue> contained;  // null when the optional is empty
};

namespace nxrt {

using Value = ::NxValue;
using ValuePtr = std::shared_ptr<Value>;

// Product of dims; throws on negative dimensions or overflow.
size_t ElementCount(std::span<const int64_t> dims);

// An empty tensor value (no type, shape or data yet), for the caller to fill. Cheap: values are
// recycled (with their dims' capacity) and their control blocks come from a free list, so the
// tensors of steady-state runs cost no allocation.
ValuePtr NewTensorValue();

// A tensor that owns a fresh, 64-byte aligned, zero-initialised buffer.
ValuePtr MakeTensor(NxElementType type, std::span<const int64_t> dims);

class BufferPool;

// A tensor whose buffer comes from `pool` (contents uninitialised): for kernel outputs, which
// the kernel writes in full. String tensors get empty strings.
ValuePtr MakeTensorFromPool(NxElementType type, std::span<const int64_t> dims, BufferPool& pool);

// A tensor that borrows `data` (no copy). `keep_alive` (may be null) is held as long as the
// tensor lives, e.g. a mapping of the model file.
ValuePtr WrapTensor(NxElementType type, std::span<const int64_t> dims, void* data,
                    std::shared_ptr<void> keep_alive);

// Where a tensor's data lives (never null: host memory when unset).
const NxMemoryInfo* MemoryOf(const Value& v);
// Whether host code may read the tensor's data.
bool IsHostReadable(const Value& v);

// Bytes of the tensor's non-string payload.
size_t TensorBytes(const Value& v);

// "float[1,3,224,224]" for messages.
std::string DescribeTensor(const Value& v);
std::string ShapeString(std::span<const int64_t> dims);

}  // namespace nxrt
