// Memory descriptions: which device a block of memory belongs to and whether the host CPU may
// touch it. Descriptions are interned, so a `const NxMemoryInfo*` from InternMemoryInfo is
// stable for the process and two of them name the same memory exactly when they are equal.
#pragma once

#include <string>

#include "nxrt/nxrt_types.h"

namespace nxrt {

// Plain host memory ({"Cpu", CPU, 0, 0, HOST_ACCESSIBLE}).
const NxMemoryInfo* HostMemory();

// The canonical copy of `info` (name copied). Throws NX_INVALID_ARGUMENT for a description with
// an unknown device type or memory kind.
const NxMemoryInfo* InternMemoryInfo(const NxMemoryInfo& info);

// Device type, vendor, device id and kind equal (names are for people).
bool SameMemory(const NxMemoryInfo* a, const NxMemoryInfo* b);

// Whether host code (and host-memory kernels) may read and write this memory directly.
inline bool HostAccessible(const NxMemoryInfo* m) {
  return m == nullptr || m->kind == NX_MEMORY_HOST_ACCESSIBLE;
}

// "cpu", "gpu", "npu", "fpga" or "other".
const char* DeviceTypeName(NxDeviceType type);

// "SimDevice (npu 0, device memory)" for messages.
std::string DescribeMemory(const NxMemoryInfo* m);

}  // namespace nxrt
