#include "base/memory_info.h"

#include <cstring>
#include <deque>
#include <mutex>
#include <type_traits>

#include "base/error.h"

namespace nxrt {
namespace {

struct Interned {
  std::string name;
  NxMemoryInfo info;
};

std::mutex& InternMutex() {
  static std::mutex mu;
  return mu;
}
// A deque never moves its elements, so the pointers handed out stay valid.
std::deque<Interned>& InternTable() {
  static std::deque<Interned> table;
  return table;
}

}  // namespace

const NxMemoryInfo* HostMemory() {
  static const NxMemoryInfo* host =
      InternMemoryInfo(NxMemoryInfo{1, "Cpu", NX_DEVICE_CPU, 0, 0, NX_MEMORY_HOST_ACCESSIBLE, 64});
  return host;
}

bool SameMemory(const NxMemoryInfo* a, const NxMemoryInfo* b) {
  if (a == nullptr) a = HostMemory();
  if (b == nullptr) b = HostMemory();
  return a == b || (a->device_type == b->device_type && a->vendor_id == b->vendor_id &&
                    a->device_id == b->device_id && a->kind == b->kind);
}

const NxMemoryInfo* InternMemoryInfo(const NxMemoryInfo& info) {
  const auto device_type = RawEnum(info.device_type);
  const auto kind = RawEnum(info.kind);
  NXRT_CHECK(device_type >= NX_DEVICE_CPU && device_type <= NX_DEVICE_OTHER, NX_INVALID_ARGUMENT,
             "memory description has an unknown device type " + std::to_string(device_type));
  NXRT_CHECK(kind == NX_MEMORY_DEVICE || kind == NX_MEMORY_HOST_ACCESSIBLE, NX_INVALID_ARGUMENT,
             "memory description has an unknown memory kind " + std::to_string(kind));
  NXRT_CHECK(info.alignment == 0 || (info.alignment & (info.alignment - 1)) == 0,
             NX_INVALID_ARGUMENT,
             "memory alignment " + std::to_string(info.alignment) + " is not a power of two");
  std::lock_guard<std::mutex> lock(InternMutex());
  for (const Interned& e : InternTable()) {
    if (SameMemory(&e.info, &info)) return &e.info;
  }
  Interned& e = InternTable().emplace_back();
  e.name = info.name ? info.name : "";
  e.info = info;
  e.info.version = 1;
  e.info.name = e.name.c_str();
  if (e.info.alignment == 0) e.info.alignment = 64;
  return &e.info;
}

const char* DeviceTypeName(NxDeviceType t) {
  switch (t) {
    case NX_DEVICE_CPU:
      return "cpu";
    case NX_DEVICE_GPU:
      return "gpu";
    case NX_DEVICE_NPU:
      return "npu";
    case NX_DEVICE_FPGA:
      return "fpga";
    default:
      return "other";
  }
}

std::string DescribeMemory(const NxMemoryInfo* m) {
  if (m == nullptr) m = HostMemory();
  return std::string(m->name) + " (" + DeviceTypeName(m->device_type) + " " +
         std::to_string(m->device_id) +
         (m->kind == NX_MEMORY_DEVICE ? ", device memory)" : ", host-accessible memory)");
}

}  // namespace nxrt
