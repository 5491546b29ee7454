#include "base/value.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "base/allocator.h"
#include "base/buffer_pool.h"
#include "base/element_type.h"
#include "base/error.h"
#include "base/free_list.h"
#include "base/memory_info.h"
#include "base/run_control.h"

namespace nxrt {
namespace {

// Tensor values are recycled: a run makes one per node output, and a recycled value keeps the
// capacity of its dims, so with the free-listed control blocks (base/free_list.h) a steady-state
// run allocates nothing for its tensors. A recycled value is emptied first (its buffer goes back
// to its pool at once).
class RecycledValues {
 public:
  static Value* Take() {
    if (void* v = Kept().Pop()) return static_cast<Value*>(v);
    return new Value;
  }

  static void Give(Value* v) noexcept {
    v->storage.reset();
    v->strings.clear();
    v->elements.clear();
    v->contained.reset();
    v->data = nullptr;
    v->memory = nullptr;
    v->count = 0;
    v->kind = NX_VALUE_TENSOR;
    v->type = NX_TYPE_UNDEFINED;
    v->sequence_type = NX_TYPE_UNDEFINED;
    v->dims.clear();
    if (!Kept().Push(v)) delete v;
  }

 private:
  static PointerStack& Kept() {
    static PointerStack* kept = new PointerStack;  // never destroyed: values freed at exit find it
    return *kept;
  }
};

}  // namespace

ValuePtr NewTensorValue() {
  return ValuePtr(
      RecycledValues::Take(), [](Value* v) { RecycledValues::Give(v); }, FreeListAllocator<char>());
}

size_t ElementCount(std::span<const int64_t> dims) {
  size_t n = 1;
  for (int64_t d : dims) {
    NXRT_CHECK(d >= 0, NX_INVALID_ARGUMENT, "negative dimension in shape " + ShapeString(dims));
    if (d != 0 && n > std::numeric_limits<size_t>::max() / static_cast<size_t>(d)) {
      Throw(NX_INVALID_ARGUMENT, "shape " + ShapeString(dims) + " has too many elements");
    }
    n *= static_cast<size_t>(d);
  }
  return n;
}

ValuePtr MakeTensor(NxElementType type, std::span<const int64_t> dims) {
  NXRT_CHECK(IsKnownElementType(type), NX_INVALID_ARGUMENT,
             "unknown element type " + std::to_string(static_cast<int>(type)));
  ValuePtr v = NewTensorValue();
  v->kind = NX_VALUE_TENSOR;
  v->type = type;
  v->dims.assign(dims.begin(), dims.end());
  v->count = ElementCount(dims);
  if (type == NX_TYPE_STRING) {
    v->strings.resize(v->count);
    return v;
  }
  size_t bytes = StorageBytes(type, v->count);
  size_t padded = (bytes + 63) / 64 * 64;
  if (padded == 0) padded = 64;
  // A run with a memory limit pays for the tensor until it is freed (throws when over it).
  std::shared_ptr<MemoryBudget> budget;
  if (const auto* current = CurrentMemoryBudget()) {
    (*current)->Charge(padded);
    budget = *current;
  }
  void* p = nullptr;
  try {
    p = AllocateHostBlock(bytes);
  } catch (...) {
    if (budget) budget->Release(padded);
    throw;
  }
  std::memset(p, 0, padded);
  v->data = p;
  v->storage = std::shared_ptr<void>(p, [budget, padded](void* q) {
    if (budget) budget->Release(padded);
    std::free(q);
  });
  return v;
}

ValuePtr MakeTensorFromPool(NxElementType type, std::span<const int64_t> dims, BufferPool& pool) {
  if (type == NX_TYPE_STRING) return MakeTensor(type, dims);
  NXRT_CHECK(IsKnownElementType(type), NX_INVALID_ARGUMENT,
             "unknown element type " + std::to_string(static_cast<int>(type)));
  ValuePtr v = NewTensorValue();
  v->kind = NX_VALUE_TENSOR;
  v->type = type;
  v->dims.assign(dims.begin(), dims.end());
  v->count = ElementCount(dims);
  v->storage = pool.Acquire(StorageBytes(type, v->count));
  v->data = v->storage.get();
  if (!SameMemory(pool.memory(), HostMemory())) v->memory = pool.memory();
  return v;
}

ValuePtr WrapTensor(NxElementType type, std::span<const int64_t> dims, void* data,
                    std::shared_ptr<void> keep_alive) {
  NXRT_CHECK(type != NX_TYPE_STRING, NX_INVALID_ARGUMENT, "string tensors cannot wrap raw memory");
  auto v = std::make_shared<Value>();
  v->kind = NX_VALUE_TENSOR;
  v->type = type;
  v->dims.assign(dims.begin(), dims.end());
  v->count = ElementCount(dims);
  v->data = data;
  v->storage = std::move(keep_alive);
  return v;
}

const NxMemoryInfo* MemoryOf(const Value& v) { return v.memory ? v.memory : HostMemory(); }

bool IsHostReadable(const Value& v) { return HostAccessible(v.memory); }

size_t TensorBytes(const Value& v) { return StorageBytes(v.type, v.count); }

std::string ShapeString(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

std::string DescribeTensor(const Value& v) {
  if (v.kind == NX_VALUE_SEQUENCE)
    return std::string("sequence<") + ElementTypeName(v.sequence_type) + ">";
  if (v.kind == NX_VALUE_OPTIONAL) return "optional";
  return std::string(ElementTypeName(v.type)) + ShapeString(v.dims);
}

}  // namespace nxrt
