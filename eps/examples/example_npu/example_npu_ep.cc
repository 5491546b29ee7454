// ExampleNpu: an EP that runs only on a virtual NPU it creates itself (plugin ABI version 3),
// written with the C++ SDK (include/nxrt/nxrt_ep.hpp). It stands for a vendor's NPU simulator:
// developers build and test for the NPU on a machine that does not have one ("off-target"), and
// the simulator models one NPU generation ("arch") exactly, operator coverage included.
//
//   - CreateVirtualDevices2: the application registers the library with a request for a virtual
//     NPU of some arch ({"arch", "nx2"}); the factory creates it. Without such a request the EP
//     has no device and no session can use it.
//   - GetSupportedDevices: claim only those virtual NPUs. A real NPU the host discovered (an
//     Intel NPU in sysfs, say) is not this simulator's business, nor is a virtual NPU that
//     another EP created (the host offers those to their creator only anyway).
//   - CreateEp: refuse to run without a device, and pick the operator set of the device's arch.
//
// Kernels (float32, host memory, eps/examples/common/host_kernels.h): arch nx1 has Add, Mul and
// Relu; nx2 adds Sigmoid and MatMul (2-D). Nodes the arch lacks are left to other EPs.
//
// Test hook (dlsym): ExampleNpu_LastArch, at the end.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nxrt/nxrt_ep.hpp>
#include <string>
#include <vector>

#include "common/host_kernels.h"

namespace example_npu {
namespace {

using namespace nxrt::ep;
using examples::Binary;
using examples::MatMul2D;
using examples::ReluOp;
using examples::SigmoidOp;
using examples::Unary;

constexpr const char* kEpName = "ExampleNpu";
constexpr const char* kVendor = "nxrt examples";
constexpr uint32_t kVendorId = 0;  // no PCI vendor id: this NPU exists only in software

// The NPU generations the simulator models; device_id tells them apart like a PCI device id.
enum class Arch { kNx1, kNx2 };
struct ArchInfo {
  const char* name;
  uint32_t device_id;
  Arch arch;
};
constexpr ArchInfo kArchs[] = {{"nx1", 1, Arch::kNx1}, {"nx2", 2, Arch::kNx2}};
constexpr const char* kDefaultArch = "nx1";

const ArchInfo* FindArch(const std::string& name) {
  for (const ArchInfo& a : kArchs)
    if (name == a.name) return &a;
  return nullptr;
}

std::string KnownArchs() {
  std::string known;
  for (const ArchInfo& a : kArchs) known += (known.empty() ? "" : ", ") + std::string(a.name);
  return known;
}

// The arch of the most recent CreateEp, for the test hook.
std::mutex g_last_mu;
std::string g_last_arch;

// ---- Kernels ----------------------------------------------------------------------------------
// One registry per arch: the registry is what the EP can run, so GetCapability (and the host,
// when it looks kernels up) sees exactly the arch's operators. nx2 is a superset of nx1.

void RegisterKernels(NxKernelRegistry* registry, Arch arch) {
  const std::vector<NxElementType> f32 = {NX_TYPE_FLOAT};
  // Add/Mul 7 brought numpy broadcasting; Relu 6 dropped consumed_inputs; later versions only
  // added element types.
  KernelDefBuilder("Add")
      .Versions(7)
      .Constraint("T", f32, {0, 1}, {0})
      .MayInplace(0, 0)
      .Build<Binary<std::plus<float>>>(registry);
  KernelDefBuilder("Mul")
      .Versions(7)
      .Constraint("T", f32, {0, 1}, {0})
      .MayInplace(0, 0)
      .Build<Binary<std::multiplies<float>>>(registry);
  KernelDefBuilder("Relu")
      .Versions(6)
      .Constraint("T", f32, {0}, {0})
      .MayInplace(0, 0)
      .Build<Unary<ReluOp>>(registry);
  if (arch == Arch::kNx1) return;
  // Sigmoid 6 dropped consumed_inputs; MatMul 1, 9 and 13 differ only in types.
  KernelDefBuilder("Sigmoid")
      .Versions(6)
      .Constraint("T", f32, {0}, {0})
      .MayInplace(0, 0)
      .Build<Unary<SigmoidOp>>(registry);
  KernelDefBuilder("MatMul")
      .Versions(1)
      .Constraint("T", f32, {0, 1}, {0})
      .Build<MatMul2D>(registry);
}

// ---- EP ---------------------------------------------------------------------------------------

struct NpuEp {
  NxEp base;                                   // first member: the host sees an NxEp*
  const NxKernelRegistry* registry = nullptr;  // the arch's
};

const char* EpGetName(const NxEp*) { return kEpName; }

NxStatus* EpGetKernelRegistry(NxEp* self, const NxKernelRegistry** registry) {
  *registry = reinterpret_cast<NpuEp*>(self)->registry;
  return nullptr;
}

// Claims what the arch's registry has kernels for, except a MatMul whose inputs are not both
// known to be 2-D (the NPU's matrix unit takes plain matrices).
NxStatus* EpGetCapability(NxEp* self, const NxGraph* graph, NxCapability* capability) {
  const NxKernelRegistry* registry = reinterpret_cast<NpuEp*>(self)->registry;
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

struct NpuFactory {
  NxEpFactory base;  // first member: the host sees an NxEpFactory*
  NxKernelRegistry* nx1 = nullptr;
  NxKernelRegistry* nx2 = nullptr;
};

const char* FactoryGetName(const NxEpFactory*) { return kEpName; }
const char* FactoryGetVendor(const NxEpFactory*) { return kVendor; }
const char* FactoryGetVersion(const NxEpFactory*) { return "1.0.0"; }
uint32_t FactoryGetVendorId(const NxEpFactory*) { return kVendorId; }

// Called at registration, once per virtual-device request. Only NPU requests concern this EP;
// for other types it adds nothing (not an error). For an NPU request it is strict about the
// options: a typo ("arhc") or an arch the simulator does not model fails the registration with
// a message naming it, instead of quietly simulating the default NPU.
NxStatus* FactoryCreateVirtualDevices2(NxEpFactory*, NxDeviceType type,
                                       const NxKeyValue2* const* options, size_t num_options,
                                       NxVirtualDeviceList* created) {
  return Guard([&] {
    if (type != NX_DEVICE_NPU) return;
    for (size_t i = 0; i < num_options; ++i) {
      const std::string key = options[i]->key ? options[i]->key : "";
      if (key != "arch")
        Fail(NX_INVALID_ARGUMENT,
             std::string(kEpName) + ": unknown virtual NPU option '" + key + "' (known: arch)");
    }
    const std::string arch = FindKeyValue(options, num_options, "arch").value_or(kDefaultArch);
    const ArchInfo* info = FindArch(arch);
    if (info == nullptr)
      Fail(NX_INVALID_ARGUMENT, std::string(kEpName) + ": unknown NPU arch '" + arch +
                                    "' (known: " + KnownArchs() + ")");
    // The host adds is_virtual = "1" and discovered_by = "ExampleNpu".
    AddVirtualDevice(created, NX_DEVICE_NPU, kVendor, kVendorId, info->device_id, {{"arch", arch}});
  });
}

// Called once at registration with every hardware device, then the virtual ones this factory
// created. Only the latter are this EP's: is_virtual and discovered_by are set by the host, so
// they cannot be faked by discovery or by another EP.
NxStatus* FactoryGetSupportedDevices(NxEpFactory*, const NxHardwareDevice* const* devices,
                                     size_t num_devices, NxEpDeviceList* supported) {
  return Guard([&] {
    for (size_t i = 0; i < num_devices; ++i) {
      HardwareDeviceView device(devices[i]);
      if (device.type() != NX_DEVICE_NPU || !device.is_virtual_from(kEpName)) continue;
      // The arch goes into the EP metadata too, where applications look when they pick EP
      // devices. The hints are the target NPU's, not the simulator's: a policy that picks the
      // virtual NPU should weigh it as the device it stands for. No default options.
      AddEpDevice(supported, device.handle(),
                  {{"arch", device.metadata_or("arch", kDefaultArch)},
                   {"performance_hint", "50"},
                   {"power_hint", "3"}});
    }
  });
}

NxStatus* FactoryCreateEp(NxEpFactory* self, const NxEpCreateArgs* args, NxEp** out) {
  auto* factory = reinterpret_cast<NpuFactory*>(self);
  return Guard([&] {
    // Appending the EP by name on a library registered without a virtual NPU request gives no
    // devices: say how to fix it rather than run as some default NPU.
    std::vector<EpDeviceView> devices = EpDevicesOf(args);
    if (devices.empty())
      Fail(NX_INVALID_ARGUMENT, std::string(kEpName) +
                                    " runs only on a virtual NPU: register the library with a "
                                    "virtual NPU request");
    // The first device (the session's priority order) decides the operator set. A simulator
    // of one NPU has no use for several; a real multi-NPU EP would compile for each.
    const std::string arch = devices[0].metadata_or("arch", kDefaultArch);
    const ArchInfo* info = FindArch(arch);
    if (info == nullptr)  // only if the host broke the metadata we gave it
      Fail(NX_INVALID_PLUGIN, std::string(kEpName) + ": EP device has unknown arch '" + arch + "'");
    for (size_t i = 1; i < devices.size(); ++i) {
      const std::string other = devices[i].metadata_or("arch", kDefaultArch);
      if (other != arch)
        Host().Log(args->logger, NX_LOG_WARNING,
                   (std::string(kEpName) + ": simulating arch " + arch + " only; the " + other +
                    " device is ignored")
                       .c_str());
    }
    {
      std::lock_guard<std::mutex> lock(g_last_mu);
      g_last_arch = arch;
    }

    auto ep = std::make_unique<NpuEp>();  // value-initialised: unset members are NULL
    ep->base.version = NXRT_EP_API_VERSION;
    ep->base.GetName = &EpGetName;
    ep->base.GetCapability = &EpGetCapability;
    ep->base.GetKernelRegistry = &EpGetKernelRegistry;
    ep->registry = info->arch == Arch::kNx1 ? factory->nx1 : factory->nx2;
    *out = &ep.release()->base;
  });
}

void FactoryReleaseEp(NxEpFactory*, NxEp* ep) { delete reinterpret_cast<NpuEp*>(ep); }

void ReleaseRegistries(NpuFactory* factory) {
  if (factory->nx1 != nullptr) Host().ReleaseKernelRegistry(factory->nx1);
  if (factory->nx2 != nullptr) Host().ReleaseKernelRegistry(factory->nx2);
}

}  // namespace
}  // namespace example_npu

// ---- Entry points -----------------------------------------------------------------------------

extern "C" NXRT_EXPORT NxStatus* NxrtCreateEpFactories(const NxHostApi* host, const char*,
                                                       NxEpFactory** factories,
                                                       size_t max_factories,
                                                       size_t* num_factories) {
  using namespace example_npu;
  if (host == nullptr) return nullptr;  // cannot even report an error
  // Virtual devices are ABI version 3; without them this EP has nothing to run on.
  if (host->version < 3)
    return host->CreateStatus(NX_INVALID_PLUGIN, "ExampleNpu needs plugin ABI 3");
  SetHost(host);
  if (max_factories < 1) return host->CreateStatus(NX_INVALID_ARGUMENT, "no room for a factory");
  auto factory = std::make_unique<NpuFactory>();
  NxStatus* status = Guard([&] {
    ThrowIfError(host->CreateKernelRegistry(&factory->nx1));
    RegisterKernels(factory->nx1, Arch::kNx1);
    ThrowIfError(host->CreateKernelRegistry(&factory->nx2));
    RegisterKernels(factory->nx2, Arch::kNx2);
  });
  if (status != nullptr) {
    ReleaseRegistries(factory.get());
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
  auto* npu_factory = reinterpret_cast<example_npu::NpuFactory*>(factory);
  example_npu::ReleaseRegistries(npu_factory);
  delete npu_factory;
}

// Test hook (not part of the EP ABI; found with dlsym): the arch the most recent successful
// CreateEp of this process simulates ("" before the first). Valid until the next CreateEp.
extern "C" NXRT_EXPORT const char* ExampleNpu_LastArch() {
  std::lock_guard<std::mutex> lock(example_npu::g_last_mu);
  return example_npu::g_last_arch.c_str();
}
