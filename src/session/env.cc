#include "session/env.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/memory_info.h"

namespace nxrt {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

Env::Env(Logger logger) : logger_(std::move(logger)) {
  for (const NxHardwareDevice& d : ProcessHardware()) hardware_.push_back(&d);
}

Env::Env(Logger logger, std::vector<NxHardwareDevice> hardware)
    : logger_(std::move(logger)), own_hardware_(std::move(hardware)) {
  for (const NxHardwareDevice& d : own_hardware_) hardware_.push_back(&d);
}

Env::~Env() {
  std::lock_guard<std::mutex> lock(mutex_);
  libraries_.clear();
  cpu_library_.reset();
}

EpFactory* Env::FactoryForMemory(const NxMemoryInfo* memory) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [reg_name, lib] : libraries_) {
    for (auto& f : lib->factories())
      if (f.ArenaOf(memory) != nullptr) return &f;
  }
  return nullptr;
}

ValuePtr Env::AllocateTensor(NxElementType type, std::span<const int64_t> dims,
                             const NxMemoryInfo* memory) {
  if (HostAccessible(memory) && SameMemory(memory, HostMemory())) return MakeTensor(type, dims);
  NXRT_CHECK(type != NX_TYPE_STRING, NX_INVALID_ARGUMENT,
             "string tensors live in host memory only, not in " + DescribeMemory(memory));
  EpFactory* f = FactoryForMemory(memory);
  NXRT_CHECK(f != nullptr, NX_NOT_FOUND,
             "no registered EP provides an allocator for " + DescribeMemory(memory));
  return MakeTensorFromPool(type, dims, *f->ArenaOf(memory));
}

void Env::CopyWithTransfer(const Value& src, Value& dst) {
  const NxMemoryInfo* from = MemoryOf(src);
  const NxMemoryInfo* to = MemoryOf(dst);
  std::vector<std::pair<std::string, NxDataTransfer*>> transfers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [reg_name, lib] : libraries_)
      for (auto& f : lib->factories())
        if (f.transfer) transfers.emplace_back(f.name, f.transfer);
    if (cpu_library_)
      for (auto& f : cpu_library_->factories())
        if (f.transfer) transfers.emplace_back(f.name, f.transfer);
  }
  for (auto& [name, t] : transfers) {
    if (!t->CanCopy(t, from, to)) continue;
    const NxValue* s = &src;
    NxValue* d = &dst;
    ThrowIfStatus(t->CopyTensors(t, &s, &d, 1), "EP '" + name + "' could not copy a tensor from " +
                                                    DescribeMemory(from) + " to " +
                                                    DescribeMemory(to));
    return;
  }
  // No direct route: through host memory, when both legs exist.
  NXRT_CHECK(!HostAccessible(from) && !HostAccessible(to), NX_NOT_IMPLEMENTED,
             "no registered EP can copy tensors from " + DescribeMemory(from) + " to " +
                 DescribeMemory(to));
  ValuePtr staging = MakeTensor(src.type, src.dims);
  CopyWithTransfer(src, *staging);
  CopyWithTransfer(*staging, dst);
}

void Env::CopyTensor(const Value& src, Value& dst) {
  NXRT_CHECK(src.kind == NX_VALUE_TENSOR && dst.kind == NX_VALUE_TENSOR && src.type == dst.type &&
                 src.dims == dst.dims,
             NX_INVALID_ARGUMENT,
             "cannot copy " + DescribeTensor(src) + " into " + DescribeTensor(dst));
  if (src.type == NX_TYPE_STRING) {
    dst.strings = src.strings;
    return;
  }
  if (IsHostReadable(src) && IsHostReadable(dst)) {
    if (TensorBytes(src) > 0 && src.data != dst.data)
      std::memcpy(dst.data, src.data, TensorBytes(src));
    return;
  }
  if (TensorBytes(src) == 0) return;
  CopyWithTransfer(src, dst);
}

ValuePtr Env::CopyToMemory(const Value& src, const NxMemoryInfo* memory) {
  ValuePtr dst = AllocateTensor(src.type, src.dims, memory);
  CopyTensor(src, *dst);
  return dst;
}

std::string Env::DefaultCpuLibraryPath() {
  if (const char* p = std::getenv("NXRT_CPU_EP_LIBRARY"); p != nullptr && p[0] != '\0') return p;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&Env::DefaultCpuLibraryPath), &info) != 0 && info.dli_fname) {
    return (std::filesystem::path(info.dli_fname).parent_path() / "libnxrt_ep_cpu.so").string();
  }
  return "libnxrt_ep_cpu.so";
}

void Env::RegisterLibrary(const std::string& name, const std::string& path,
                          const std::vector<VirtualDeviceRequest>& requests) {
  NXRT_CHECK(!name.empty(), NX_INVALID_ARGUMENT, "an EP library needs a registration name");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    NXRT_CHECK(libraries_.find(name) == libraries_.end(), NX_INVALID_ARGUMENT,
               "an EP library is already registered as '" + name + "'");
  }
  auto lib =
      EpLibrary::Load(path, name, hardware_, requests, &logger_);  // unlocked: plugin code runs
  std::lock_guard<std::mutex> lock(mutex_);
  NXRT_CHECK(libraries_.find(name) == libraries_.end(), NX_INVALID_ARGUMENT,
             "an EP library is already registered as '" + name + "'");
  for (auto& f : lib->factories()) {
    logger_.Log(NX_LOG_INFO,
                "registered EP '" + f.name + "' (" + f.vendor + " " + f.version + ") from " + path);
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    if (lib->virtual_devices_per_request()[r] == 0) {
      logger_.Log(NX_LOG_WARNING, "EP library '" + name + "' created no virtual " +
                                      DeviceTypeName(requests[r].type) + " device for request " +
                                      std::to_string(r + 1));
    }
  }
  libraries_.emplace(name, std::move(lib));
  registration_order_.push_back(name);
}

std::vector<const NxEpDevice*> Env::EpDevices() {
  DefaultCpuFactory();
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const NxEpDevice*> out;
  for (const std::string& name : registration_order_)
    for (auto& f : libraries_.at(name)->factories())
      for (const NxEpDevice* d : f.devices) out.push_back(d);
  for (auto& f : cpu_library_->factories())
    for (const NxEpDevice* d : f.devices) out.push_back(d);
  return out;
}

void Env::UnregisterLibrary(const std::string& name) {
  std::unique_ptr<EpLibrary> doomed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = libraries_.find(name);
    NXRT_CHECK(it != libraries_.end(), NX_NOT_FOUND,
               "no EP library is registered as '" + name + "'");
    auto use = uses_.find(it->second.get());
    if (use != uses_.end() && use->second > 0) {
      Throw(NX_INVALID_ARGUMENT, "EP library '" + name + "' is still used by " +
                                     std::to_string(use->second) +
                                     " live session(s); release them first");
    }
    for (auto& f : it->second->factories()) {
      if (size_t live = f.live_device_blocks(); live > 0) {
        Throw(NX_INVALID_ARGUMENT, "EP library '" + name + "' still owns " + std::to_string(live) +
                                       " live tensor(s) in " + DescribeMemory(f.memory) +
                                       "; release them first");
      }
    }
    doomed = std::move(it->second);
    libraries_.erase(it);
    registration_order_.erase(
        std::find(registration_order_.begin(), registration_order_.end(), name));
  }
}

EpFactory* Env::FindFactory(const std::string& ep_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string wanted = Lower(ep_name);
  for (const std::string& name : registration_order_) {  // the first registered wins
    for (auto& f : libraries_.at(name)->factories())
      if (Lower(f.name) == wanted) return &f;
  }
  if (cpu_library_) {
    for (auto& f : cpu_library_->factories())
      if (Lower(f.name) == wanted) return &f;
  }
  return nullptr;
}

EpFactory* Env::DefaultCpuFactory() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!cpu_library_) {
    // The CPU EP's kernels run on the session's thread pool (base/thread_pool.h); only
    // oneDNN's convolution primitives still open OpenMP regions (Debian's oneDNN supports
    // nothing else). libgomp reads its wait policy once, when it is loaded with the EP, and by
    // default spins for milliseconds between regions: next to the pool's own spinning workers,
    // and with its barrier waiting for every team thread, that makes a busy machine up to 200x
    // slower (docs/threading.md). Its workers sleep instead; applications that want them to
    // spin set OMP_WAIT_POLICY=ACTIVE (or GOMP_SPINCOUNT) themselves.
    if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr) {
      setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
    }
    std::string path = DefaultCpuLibraryPath();
    try {
      cpu_library_ = EpLibrary::Load(path, "cpu", hardware_);
    } catch (const Error& e) {
      Throw(e.code(), std::string("cannot load the default CPU EP: ") + e.what() +
                          " (set NXRT_CPU_EP_LIBRARY to its path)");
    }
  }
  return &cpu_library_->factories().front();
}

void Env::PreloadDefaultCpu() noexcept {
  try {
    DefaultCpuFactory();
  } catch (...) {  // reported by the session that needs the CPU EP
  }
}

void Env::AddUse(EpLibrary* library) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++uses_[library];
}

void Env::ReleaseUse(EpLibrary* library) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = uses_.find(library);
  if (it != uses_.end() && --it->second == 0) uses_.erase(it);
}

}  // namespace nxrt
