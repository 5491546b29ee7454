// OrtApi slots for values (an OrtValue is nxrt's NxValue), their types and memory, and the host
// allocator plugins may use.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "base/error.h"
#include "base/memory_info.h"
#include "ort_plugins/ort_api_helpers.h"
#include "ort_plugins/ort_ep_adapter.h"
#include "ort_plugins/ort_graph_view.h"
#include "ort_plugins/ort_host_objects.h"

namespace nxrt::ort {
namespace {

const Value* V(const OrtValue* v) { return reinterpret_cast<const Value*>(v); }
Value* V(OrtValue* v) { return reinterpret_cast<Value*>(v); }

// Values a plugin created (CreateTensor*AsOrtValue, OpAttr_GetTensorAttributeAsOrtValue): only
// those are released by ReleaseValue; the host's values (inputs, outputs, initializers) are
// borrowed by the plugin.
struct PluginValues {
  std::mutex mutex;
  std::unordered_set<const Value*> live;
};
PluginValues& Owned() {
  static auto* values = new PluginValues();
  return *values;
}
OrtValue* Adopt(Value* v) {
  PluginValues& o = Owned();
  std::lock_guard<std::mutex> lock(o.mutex);
  o.live.insert(v);
  return reinterpret_cast<OrtValue*>(v);
}

void ReleaseValue(OrtValue* value) {
  Value* v = V(value);
  if (v == nullptr) return;
  {
    PluginValues& o = Owned();
    std::lock_guard<std::mutex> lock(o.mutex);
    if (o.live.erase(v) == 0) return;
  }
  delete v;
}

}  // namespace

OrtValue* AdoptPluginValue(Value* value) { return Adopt(value); }

// ---- The host's CPU memory and allocator --------------------------------------------------------

const OrtMemoryInfo* CpuMemoryInfo() {
  static const OrtMemoryInfo* info = [] {
    auto* m = new OrtMemoryInfo();
    m->name = "Cpu";
    m->allocator_type = OrtDeviceAllocator;
    m->mem_type = OrtMemTypeDefault;
    m->device.alignment = 64;
    return m;
  }();
  return info;
}

namespace {
void* CpuAlloc(OrtAllocator*, size_t size) {
  return std::aligned_alloc(64, (size + 63) / 64 * 64 + (size == 0 ? 64 : 0));
}
void CpuFree(OrtAllocator*, void* block) { std::free(block); }
const OrtMemoryInfo* CpuInfo(const OrtAllocator*) { return CpuMemoryInfo(); }
void* CpuReserve(OrtAllocator* a, size_t size) { return CpuAlloc(a, size); }
}  // namespace

OrtAllocator* CpuAllocator() {
  static OrtAllocator allocator{NXRT_ORT_API_LEVEL, &CpuAlloc, &CpuFree, &CpuInfo,
                                &CpuReserve,        nullptr,   nullptr};
  return &allocator;
}

namespace {

OrtStatus* GetAllocatorWithDefaultOptions(OrtAllocator** out) {
  if (!out) return NullArgument("GetAllocatorWithDefaultOptions");
  *out = CpuAllocator();
  return nullptr;
}
OrtStatus* AllocatorAlloc(OrtAllocator* a, size_t size, void** out) {
  if (!a || !out || !a->Alloc) return NullArgument("AllocatorAlloc");
  *out = a->Alloc(a, size);
  return *out ? nullptr : NewOrtStatus(ORT_FAIL, "AllocatorAlloc: out of memory");
}
OrtStatus* AllocatorFree(OrtAllocator* a, void* block) {
  if (!a || !a->Free) return NullArgument("AllocatorFree");
  a->Free(a, block);
  return nullptr;
}
OrtStatus* AllocatorGetInfo(const OrtAllocator* a, const OrtMemoryInfo** out) {
  if (!a || !out || !a->Info) return NullArgument("AllocatorGetInfo");
  *out = a->Info(a);
  return nullptr;
}

// ---- Values -------------------------------------------------------------------------------------

bool KnownElementType(int t) { return t >= NX_TYPE_FLOAT && t <= 23 && t != NX_TYPE_STRING; }

OrtStatus* CreateTensorAsOrtValue(OrtAllocator* allocator, const int64_t* shape, size_t rank,
                                  int type, OrtValue** out) {
  if (!allocator || !out || (rank > 0 && !shape)) return NullArgument("CreateTensorAsOrtValue");
  if (!KnownElementType(type))
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "CreateTensorAsOrtValue: unsupported element type");
  return Guard("CreateTensorAsOrtValue", [&]() -> OrtStatus* {
    auto v = std::make_unique<Value>();
    v->type = static_cast<NxElementType>(type);
    v->dims.assign(shape, shape + rank);
    v->count = ElementCount(v->dims);
    const size_t bytes = TensorBytes(*v);
    void* data = allocator->Alloc(allocator, bytes == 0 ? 1 : bytes);
    if (data == nullptr) return NewOrtStatus(ORT_FAIL, "CreateTensorAsOrtValue: out of memory");
    v->data = data;
    v->storage =
        std::shared_ptr<void>(data, [allocator](void* p) { allocator->Free(allocator, p); });
    *out = Adopt(v.release());
    return nullptr;
  });
}

OrtStatus* CreateTensorWithDataAsOrtValue(const OrtMemoryInfo* info, void* data, size_t bytes,
                                          const int64_t* shape, size_t rank, int type,
                                          OrtValue** out) {
  if (!info || !out || (rank > 0 && !shape)) return NullArgument("CreateTensorWithDataAsOrtValue");
  if (!KnownElementType(type))
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "CreateTensorWithDataAsOrtValue: unsupported element type");
  return Guard("CreateTensorWithDataAsOrtValue", [&]() -> OrtStatus* {
    auto v = std::make_unique<Value>();
    v->type = static_cast<NxElementType>(type);
    v->dims.assign(shape, shape + rank);
    v->count = ElementCount(v->dims);
    if (TensorBytes(*v) > bytes)
      return NewOrtStatus(ORT_INVALID_ARGUMENT,
                          "CreateTensorWithDataAsOrtValue: the buffer is smaller than the shape");
    if (v->count > 0 && data == nullptr) return NullArgument("CreateTensorWithDataAsOrtValue");
    v->data = data;  // borrowed
    const NxMemoryInfo m = ToNxMemoryInfo(*info);
    v->memory = m.kind == NX_MEMORY_HOST_ACCESSIBLE && m.device_type == NX_DEVICE_CPU
                    ? nullptr
                    : InternMemoryInfo(m);
    *out = Adopt(v.release());
    return nullptr;
  });
}

OrtStatus* IsTensor(const OrtValue* v, int* out) {
  if (!v || !out) return NullArgument("IsTensor");
  *out = V(v)->kind == NX_VALUE_TENSOR;
  return nullptr;
}
OrtStatus* HasValue(const OrtValue* v, int* out) {
  if (!v || !out) return NullArgument("HasValue");
  *out = V(v)->kind != NX_VALUE_OPTIONAL || V(v)->contained != nullptr;
  return nullptr;
}
OrtStatus* GetValueType(const OrtValue* v, ONNXType* out) {
  if (!v || !out) return NullArgument("GetValueType");
  switch (V(v)->kind) {
    case NX_VALUE_SEQUENCE:
      *out = ONNX_TYPE_SEQUENCE;
      break;
    case NX_VALUE_OPTIONAL:
      *out = ONNX_TYPE_OPTIONAL;
      break;
    default:
      *out = ONNX_TYPE_TENSOR;
  }
  return nullptr;
}
OrtStatus* GetTensorTypeAndShape(const OrtValue* v, OrtTensorTypeAndShapeInfo** out) {
  if (!v || !out) return NullArgument("GetTensorTypeAndShape");
  if (V(v)->kind != NX_VALUE_TENSOR)
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "GetTensorTypeAndShape: not a tensor");
  return Guard("GetTensorTypeAndShape", [&]() -> OrtStatus* {
    *out = new OrtTensorTypeAndShapeInfo(MakeTensorInfo(*V(v)));
    return nullptr;
  });
}
// The element type and a view of the dims, valid while the value lives (API level 24).
OrtStatus* GetTensorElementTypeAndShapeDataReference(const OrtValue* v, int* elem_type,
                                                     const int64_t** shape, size_t* rank) {
  if (!v || !elem_type || !shape || !rank)
    return NullArgument("GetTensorElementTypeAndShapeDataReference");
  if (V(v)->kind != NX_VALUE_TENSOR)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "GetTensorElementTypeAndShapeDataReference: not a tensor");
  *elem_type = static_cast<int>(V(v)->type);
  *shape = V(v)->dims.empty() ? nullptr : V(v)->dims.data();
  *rank = V(v)->dims.size();
  return nullptr;
}
OrtStatus* GetTypeInfo(const OrtValue* v, OrtTypeInfo** out) {
  if (!v || !out) return NullArgument("GetTypeInfo");
  return Guard("GetTypeInfo", [&]() -> OrtStatus* {
    auto t = std::make_unique<OrtTypeInfo>();
    if (V(v)->kind == NX_VALUE_TENSOR) {
      t->type = ONNX_TYPE_TENSOR;
      t->tensor = MakeTensorInfo(*V(v));
    } else {
      t->type = V(v)->kind == NX_VALUE_SEQUENCE ? ONNX_TYPE_SEQUENCE : ONNX_TYPE_OPTIONAL;
    }
    *out = t.release();
    return nullptr;
  });
}
OrtStatus* GetTensorMutableData(OrtValue* v, void** out) {
  if (!v || !out) return NullArgument("GetTensorMutableData");
  if (V(v)->kind != NX_VALUE_TENSOR || V(v)->type == NX_TYPE_STRING)
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "GetTensorMutableData: not a numeric tensor");
  *out = V(v)->data;
  return nullptr;
}
OrtStatus* GetTensorData(const OrtValue* v, const void** out) {
  if (!v || !out) return NullArgument("GetTensorData");
  if (V(v)->kind != NX_VALUE_TENSOR || V(v)->type == NX_TYPE_STRING)
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "GetTensorData: not a numeric tensor");
  *out = V(v)->data;
  return nullptr;
}
OrtStatus* GetTensorSizeInBytes(const OrtValue* v, size_t* out) {
  if (!v || !out) return NullArgument("GetTensorSizeInBytes");
  if (V(v)->kind != NX_VALUE_TENSOR || V(v)->type == NX_TYPE_STRING)
    return NewOrtStatus(ORT_INVALID_ARGUMENT, "GetTensorSizeInBytes: not a numeric tensor");
  *out = TensorBytes(*V(v));
  return nullptr;
}

const OrtMemoryInfo* MemoryInfoOf(const Value& v) { return OrtMemoryInfoFor(v.memory); }

}  // namespace

const OrtMemoryInfo* OrtMemoryInfoFor(const NxMemoryInfo* memory) {
  if (memory == nullptr || HostAccessible(memory)) return CpuMemoryInfo();
  static std::mutex mutex;
  static auto* infos = new std::map<const NxMemoryInfo*, std::unique_ptr<OrtMemoryInfo>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*infos)[memory];
  if (!slot) {
    slot = std::make_unique<OrtMemoryInfo>();
    slot->name = memory->name ? memory->name : "";
    slot->id = memory->device_id;
    slot->device.device_type = memory->device_type == NX_DEVICE_NPU ? OrtMemoryInfoDeviceType_NPU
                               : memory->device_type == NX_DEVICE_FPGA
                                   ? OrtMemoryInfoDeviceType_FPGA
                                   : OrtMemoryInfoDeviceType_GPU;
    slot->device.vendor_id = memory->vendor_id;
    slot->device.device_id = memory->device_id;
    slot->device.alignment = memory->alignment;
  }
  return slot.get();
}

namespace {

OrtStatus* GetTensorMemoryInfo(const OrtValue* v, const OrtMemoryInfo** out) {
  if (!v || !out) return NullArgument("GetTensorMemoryInfo");
  *out = MemoryInfoOf(*V(v));
  return nullptr;
}
const OrtMemoryDevice* ValueGetMemoryDevice(const OrtValue* v) {
  return v ? &MemoryInfoOf(*V(v))->device : nullptr;
}

// A tensor attribute as a value the plugin owns (it shares the model's data, read-only).
OrtStatus* OpAttrGetTensorAttributeAsOrtValue(const OrtOpAttr* a, OrtValue** out) {
  if (!a || !out) return NullArgument("OpAttr_GetTensorAttributeAsOrtValue");
  if (a->ir == nullptr || a->ir->tensor == nullptr)
    return NewOrtStatus(ORT_INVALID_ARGUMENT,
                        "OpAttr_GetTensorAttributeAsOrtValue: not a tensor attribute");
  return Guard("OpAttr_GetTensorAttributeAsOrtValue", [&]() -> OrtStatus* {
    *out = Adopt(new Value(*a->ir->tensor));
    return nullptr;
  });
}

}  // namespace

void InstallValueApi(OrtApi& api, OrtEpApi& ep_api) {
  api.GetAllocatorWithDefaultOptions = Slot(&GetAllocatorWithDefaultOptions);
  api.AllocatorAlloc = Slot(&AllocatorAlloc);
  api.AllocatorFree = Slot(&AllocatorFree);
  api.AllocatorGetInfo = Slot(&AllocatorGetInfo);
  api.CreateTensorAsOrtValue = Slot(&CreateTensorAsOrtValue);
  api.CreateTensorWithDataAsOrtValue = Slot(&CreateTensorWithDataAsOrtValue);
  api.ReleaseValue = Slot(&ReleaseValue);
  api.IsTensor = Slot(&IsTensor);
  api.HasValue = Slot(&HasValue);
  api.GetValueType = Slot(&GetValueType);
  api.GetTensorTypeAndShape = Slot(&GetTensorTypeAndShape);
  api.GetTypeInfo = Slot(&GetTypeInfo);
  api.GetTensorElementTypeAndShapeDataReference = Slot(&GetTensorElementTypeAndShapeDataReference);
  api.GetTensorMutableData = Slot(&GetTensorMutableData);
  api.GetTensorData = Slot(&GetTensorData);
  api.GetTensorSizeInBytes = Slot(&GetTensorSizeInBytes);
  api.GetTensorMemoryInfo = Slot(&GetTensorMemoryInfo);
  api.OpAttr_GetTensorAttributeAsOrtValue = Slot(&OpAttrGetTensorAttributeAsOrtValue);
  ep_api.Value_GetMemoryDevice = Slot(&ValueGetMemoryDevice);
}

}  // namespace nxrt::ort
