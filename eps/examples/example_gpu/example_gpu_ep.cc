// ExampleGpu: how a GPU vendor's own EP takes part in device selection (plugin ABI version 3),
// written with the C++ SDK (include/nxrt/nxrt_ep.hpp). It stands for an NVIDIA EP but computes
// on the host, so it runs anywhere; the device side is the point:
//
//   - GetSupportedDevices: of the hardware devices the host offers, claim the NVIDIA GPUs (real
//     ones from discovery, and virtual ones this factory created), with the EP's metadata about
//     each (speed and power hints the selection policies read) and default options.
//   - CreateVirtualDevices2: on the application's request, make a virtual NVIDIA GPU of a given
//     architecture, so that sessions can target a GPU the machine does not have.
//   - CreateEp: learn which EP devices the session chose, and read the EP's options.
//
// The EP has no memory of its own (GetMemoryInfo, allocators and data transfer stay NULL): the
// host keeps every tensor in host memory and needs no copies. Kernels (float32, host memory,
// eps/examples/common/host_kernels.h): Add, Sub, Mul (numpy broadcasting), Relu, MatMul (2-D).
//
// Test hooks (dlsym): ExampleGpu_LastDeviceCount and ExampleGpu_LastDeviceBusIds, at the end.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

#include "common/host_kernels.h"

namespace example_gpu {
namespace {

using namespace nxrt::ep;
using examples::Binary;
using examples::MatMul2D;
using examples::ReluOp;
using examples::Unary;

constexpr const char* kEpName = "ExampleGpu";
constexpr const char* kVendor = "NVIDIA";
constexpr uint32_t kNvidiaVendorId = 0x10de;  // PCI vendor id: what discovery reports for NVIDIA

// Architectures a virtual GPU can have, with the PCI device id of a representative part (A100
// for sm80, H100 for sm90), so a virtual device looks like the real one it stands for.
struct Arch {
  const char* name;
  uint32_t device_id;
};
constexpr Arch kArchs[] = {{"sm80", 0x20b0}, {"sm90", 0x2330}};
constexpr const char* kDefaultArch = "sm90";

// Session option "ep.examplegpu.precision": the EP's options reach it as session configuration
// "ep.<EP name in lower case>.<key>", the EP devices' default options merged in.
constexpr const char* kPrecisionKey = "ep.examplegpu.precision";

// What the most recent CreateEp was given, for the test hooks. Sessions may be created from
// several threads, hence the lock.
std::mutex g_last_mu;
size_t g_last_device_count = 0;
std::string g_last_bus_ids;

// ---- Kernels ----------------------------------------------------------------------------------
// Opset ranges start at the first ONNX version with today's semantics for float; later versions
// only added element types, so one open range covers them.

void RegisterKernels(NxKernelRegistry* registry) {
  const std::vector<NxElementType> f32 = {NX_TYPE_FLOAT};
  // Add/Sub/Mul 7 brought numpy broadcasting (1 and 6 had a `broadcast` attribute).
  KernelDefBuilder("Add")
      .Versions(7)
      .Constraint("T", f32, {0, 1}, {0})
      .MayInplace(0, 0)
      .Build<Binary<std::plus<float>>>(registry);
  KernelDefBuilder("Sub")
      .Versions(7)
      .Constraint("T", f32, {0, 1}, {0})
      .MayInplace(0, 0)
      .Build<Binary<std::minus<float>>>(registry);
  KernelDefBuilder("Mul")
      .Versions(7)
      .Constraint("T", f32, {0, 1}, {0})
      .MayInplace(0, 0)
      .Build<Binary<std::multiplies<float>>>(registry);
  // Relu 6 dropped the legacy consumed_inputs attribute.
  KernelDefBuilder("Relu")
      .Versions(6)
      .Constraint("T", f32, {0}, {0})
      .MayInplace(0, 0)
      .Build<Unary<ReluOp>>(registry);
  // MatMul 1, 9 and 13 differ only in types.
  KernelDefBuilder("MatMul")
      .Versions(1)
      .Constraint("T", f32, {0, 1}, {0})
      .Build<MatMul2D>(registry);
}

// ---- EP ---------------------------------------------------------------------------------------

struct GpuEp {
  NxEp base;  // first member: the host sees an NxEp*
  const NxKernelRegistry* registry = nullptr;
  // The EP devices the session chose, in priority order. A real EP would create a CUDA context
  // per GPU here (and find each by its pci_bus_id); this one only remembers them.
  std::vector<EpDeviceView> devices;
};

const char* EpGetName(const NxEp*) { return kEpName; }

NxStatus* EpGetKernelRegistry(NxEp* self, const NxKernelRegistry** registry) {
  *registry = reinterpret_cast<GpuEp*>(self)->registry;
  return nullptr;
}

// Claims every node the registry has a kernel for (the host's default) except a MatMul whose
// inputs are not both known to be 2-D: the kernel could not run it, and the CPU EP can.
NxStatus* EpGetCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  const NxKernelRegistry* registry = reinterpret_cast<GpuEp*>(self)->registry;
  return Guard([&] {
    for (size_t i = 0, count = Host().Graph_GetNodeCount(graph); i < count; ++i) {
      NodeView node(Host().Graph_GetNode(graph, i));
      if (!Host().KernelRegistry_HasKernel(registry, node.handle(), nullptr)) continue;
      if (node.op_type() == "MatMul" &&
          !(examples::IsStatically2D(node, 0) && examples::IsStatically2D(node, 1)))
        continue;
      ThrowIfError(Host().Capability_AddNode(capability, node.handle()));
    }
  });
}

// ---- Factory ----------------------------------------------------------------------------------

struct GpuFactory {
  NxEpFactory base;  // first member: the host sees an NxEpFactory*
  NxKernelRegistry* registry = nullptr;
};

const char* FactoryGetName(const NxEpFactory*) { return kEpName; }
const char* FactoryGetVendor(const NxEpFactory*) { return kVendor; }
const char* FactoryGetVersion(const NxEpFactory*) { return "1.0.0"; }
// The vendor id is how the host tells a GPU vendor's own EP from a generic one on that vendor's
// GPUs (NX_POLICY_PREFER_GPU puts the vendor's EP first).
uint32_t FactoryGetVendorId(const NxEpFactory*) { return kNvidiaVendorId; }

// Called at registration, once per virtual-device request of the application, before
// GetSupportedDevices. Only GPU requests concern this EP; for any other type it adds nothing,
// which is not an error (another factory of the library may serve it).
NxStatus* FactoryCreateVirtualDevices2(NxEpFactory*, NxDeviceType type,
                                       const NxKeyValue2* const* options, size_t num_options,
                                       NxVirtualDeviceList* created) {
  return Guard([&] {
    if (type != NX_DEVICE_GPU) return;
    // Only "arch" means something here; other options are ignored (ExampleNpu shows the strict
    // variant, which rejects keys it does not know).
    const std::string arch = FindKeyValue(options, num_options, "arch").value_or(kDefaultArch);
    const Arch* found = nullptr;
    std::string known;
    for (const Arch& a : kArchs) {
      if (arch == a.name) found = &a;
      known += (known.empty() ? "" : ", ") + std::string(a.name);
    }
    // An error fails the registration with this message: say what was wrong and what would do.
    if (found == nullptr)
      Fail(NX_INVALID_ARGUMENT,
           std::string(kEpName) + ": unknown GPU arch '" + arch + "' (known: " + known + ")");
    // The host adds is_virtual = "1" and discovered_by = "ExampleGpu"; "arch" is ours, so that
    // the EP (and the application) can tell which GPU the virtual device stands for.
    AddVirtualDevice(created, NX_DEVICE_GPU, kVendor, kNvidiaVendorId, found->device_id,
                     {{"arch", arch}});
  });
}

// Called once at registration with every hardware device of the process, then the virtual
// devices this factory created. The EP runs on NVIDIA GPUs, real or virtual; a GPU of another
// vendor is left to that vendor's EP (or a generic one).
NxStatus* FactoryGetSupportedDevices(NxEpFactory*, const NxHardwareDevice* const* devices,
                                     size_t num_devices, NxEpDeviceList* supported) {
  return Guard([&] {
    for (size_t i = 0; i < num_devices; ++i) {
      HardwareDeviceView device(devices[i]);
      if (device.type() != NX_DEVICE_GPU || device.vendor_id() != kNvidiaVendorId) continue;
      // The hints override the host's guesses for a GPU (60-80 and 150-250 W): the vendor knows
      // its EP best. Copying pci_bus_id into the EP metadata lets an application (or a custom
      // selection callback) match EP devices to GPUs without a second lookup.
      KeyValues metadata = {{"performance_hint", "90"}, {"power_hint", "250"}};
      if (auto bus_id = device.metadata("pci_bus_id")) metadata.Set("pci_bus_id", *bus_id);
      // Default options reach CreateEp as session configuration unless the application
      // overrides them when it selects the EP device.
      AddEpDevice(supported, device.handle(), metadata, {{"precision", "fp32"}});
    }
  });
}

NxStatus* FactoryCreateEp(NxEpFactory* self, const NxEpCreateArgs* args, NxEp** out) {
  return Guard([&] {
    // The EP devices the session chose. EpDevicesOf checks args->version: a version 1-2 host
    // has no such members. Empty is possible too (the EP appended by name on a machine
    // without an NVIDIA GPU): this EP computes on the host, so it still runs.
    std::vector<EpDeviceView> devices = EpDevicesOf(args);
    std::string bus_ids;  // one entry per device, "" for one without a bus id (a virtual GPU)
    for (size_t i = 0; i < devices.size(); ++i)
      bus_ids += (i ? "," : "") + devices[i].hardware().metadata_or("pci_bus_id", "");
    {
      std::lock_guard<std::mutex> lock(g_last_mu);
      g_last_device_count = devices.size();
      g_last_bus_ids = bus_ids;
    }

    // A session with an option the EP cannot honour must fail at creation, with a message
    // that names the option, rather than quietly compute something else.
    const char* value = Host().Config_Get(args->session_config, kPrecisionKey);
    const std::string precision = value ? value : "fp32";
    if (precision != "fp32")
      Fail(NX_INVALID_ARGUMENT,
           std::string(kEpName) + ": precision '" + precision + "' is not supported (fp32)");

    auto ep = std::make_unique<GpuEp>();  // value-initialised: unset members are NULL
    ep->base.version = NXRT_EP_API_VERSION;
    ep->base.GetName = &EpGetName;
    ep->base.GetCapability = &EpGetCapability;
    ep->base.GetKernelRegistry = &EpGetKernelRegistry;
    ep->registry = reinterpret_cast<GpuFactory*>(self)->registry;
    ep->devices = std::move(devices);
    Host().Log(args->logger, NX_LOG_INFO,
               (std::string(kEpName) + ": created for " + std::to_string(ep->devices.size()) +
                " device(s) [" + bus_ids + "]")
                   .c_str());
    *out = &ep.release()->base;
  });
}

void FactoryReleaseEp(NxEpFactory*, NxEp* ep) { delete reinterpret_cast<GpuEp*>(ep); }

}  // namespace
}  // namespace example_gpu

// ---- Entry points -----------------------------------------------------------------------------

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*,
                                                       NxEpFactory** factories,
                                                       size_t max_factories,
                                                       size_t* num_factories) {
  using namespace example_gpu;
  if (host == nullptr) return nullptr;  // cannot even report an error
  // Devices are ABI version 3: an older host would not call the device members, and its
  // NxHostApi lacks the HardwareDevice_/EpDevice_ calls they use.
  if (host->version < 3)
    return host->CreateStatus(NX_INVALID_PLUGIN, "ExampleGpu needs plugin ABI 3");
  SetHost(host);
  if (max_factories < 1) return host->CreateStatus(NX_INVALID_ARGUMENT, "no room for a factory");
  auto factory = std::make_unique<GpuFactory>();
  NxStatus* status = Guard([&] {
    ThrowIfError(host->CreateKernelRegistry(&factory->registry));
    RegisterKernels(factory->registry);
  });
  if (status != nullptr) {
    if (factory->registry != nullptr) host->ReleaseKernelRegistry(factory->registry);
    return status;
  }
  NxEpFactory& f = factory->base;  // value-initialised: unset members (the memory ones) are NULL
  f.version = NXRT_EP_API_VERSION;
  f.GetName = &FactoryGetName;
  f.GetVendor = &FactoryGetVendor;
  f.GetVersion = &FactoryGetVersion;
  f.GetVendorId = &FactoryGetVendorId;
  f.CreateEp = &FactoryCreateEp;
  f.ReleaseEp = &FactoryReleaseEp;
  f.CreateVirtualDevices2 = &FactoryCreateVirtualDevices2;
  f.GetSupportedDevices = &FactoryGetSupportedDevices;
  factories[0] = &factory.release()->base;
  *num_factories = 1;
  return nullptr;
}

extern "C" NXRT_EXPORT void NxrtReleaseEpFactory(NxEpFactory* factory) {
  auto* gpu_factory = reinterpret_cast<example_gpu::GpuFactory*>(factory);
  if (gpu_factory->registry != nullptr)
    nxrt::ep::Host().ReleaseKernelRegistry(gpu_factory->registry);
  delete gpu_factory;
}

// Test hooks (not part of the EP ABI; found with dlsym). What the most recent CreateEp of this
// process was given, whether it then succeeded or not: the number of EP devices, and the pci_bus_id
// metadata of their hardware devices joined with commas in the session's priority order, one entry
// per device ("" for a device without one, such as a virtual GPU). The string is valid until the
// next CreateEp.
extern "C" NXRT_EXPORT size_t ExampleGpu_LastDeviceCount() {
  std::lock_guard<std::mutex> lock(example_gpu::g_last_mu);
  return example_gpu::g_last_device_count;
}
extern "C" NXRT_EXPORT const char* ExampleGpu_LastDeviceBusIds() {
  std::lock_guard<std::mutex> lock(example_gpu::g_last_mu);
  return example_gpu::g_last_bus_ids.c_str();
}
