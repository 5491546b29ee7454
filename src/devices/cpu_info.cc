#include "devices/cpu_info.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace nxrt {
namespace {

std::string ReadLine(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// Physical cores and hardware threads from /sys/devices/system/cpu/cpu*/topology; zero when the
// tree has no topology (then the caller falls back to the thread count the OS reports).
std::pair<int, int> CountCoresAndThreads(const std::string& sysfs_root) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::path(sysfs_root) / "devices/system/cpu";
  std::set<std::pair<std::string, std::string>> cores;
  int threads = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 4 || name.compare(0, 3, "cpu") != 0 ||
        name.find_first_not_of("0123456789", 3) != std::string::npos) {
      continue;
    }
    const auto topo = entry.path() / "topology";
    const std::string core = ReadLine(topo / "core_id");
    if (core.empty()) continue;
    ++threads;
    cores.insert({ReadLine(topo / "physical_package_id"), core});
  }
  return {static_cast<int>(cores.size()), threads};
}

#if defined(__x86_64__) || defined(__i386__)
void Cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}
#endif

}  // namespace

HardwareDevice DiscoverCpu(const std::string& sysfs_root) {
  HardwareDevice cpu;
  cpu.type = NX_DEVICE_CPU;
  std::string isa;
  auto feature = [&](bool present, const char* name) {
    if (present) isa += (isa.empty() ? "" : ",") + std::string(name);
  };
#if defined(__x86_64__) || defined(__i386__)
  unsigned r[4] = {};
  Cpuid(0, 0, r);
  const unsigned max_leaf = r[0];
  char vendor[13] = {};
  std::memcpy(vendor, &r[1], 4);
  std::memcpy(vendor + 4, &r[3], 4);
  std::memcpy(vendor + 8, &r[2], 4);
  cpu.vendor = vendor;
  if (cpu.vendor == "GenuineIntel")
    cpu.vendor_id = 0x8086;
  else if (cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine")
    cpu.vendor_id = 0x1022;
  Cpuid(1, 0, r);
  const unsigned eax1 = r[0], edx1 = r[3];
  unsigned ecx1 = r[2];
  unsigned family = (eax1 >> 8) & 0xf, model = (eax1 >> 4) & 0xf;
  if (family == 0xf) family += (eax1 >> 20) & 0xff;
  if (family >= 6) model |= ((eax1 >> 16) & 0xf) << 4;
  cpu.device_id = (family << 8) | model;
  unsigned ebx7 = 0, ecx7 = 0, edx7 = 0, eax7_1 = 0;
  if (max_leaf >= 7) {
    Cpuid(7, 0, r);
    ebx7 = r[1];
    ecx7 = r[2];
    edx7 = r[3];
    Cpuid(7, 1, r);
    eax7_1 = r[0];
  }
  // A feature counts only when the OS saves its registers (XCR0): AVX needs the YMM state,
  // AVX-512 the opmask/ZMM states, AMX the tile states.
  uint64_t xcr0 = 0;
  if (ecx1 & (1u << 27)) {  // OSXSAVE
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
  const bool os_avx = (xcr0 & 0x6) == 0x6;
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;
  if (!os_avx) ecx1 &= ~((1u << 28) | (1u << 12) | (1u << 29));
  if (!os_avx) ebx7 &= ~(1u << 5), ecx7 &= ~(1u << 11), eax7_1 &= ~(1u << 4);
  if (!os_avx512) {
    ebx7 &= ~((1u << 16) | (1u << 17) | (1u << 30) | (1u << 31));
    ecx7 &= ~(1u << 11);
    eax7_1 &= ~(1u << 5);
    edx7 &= ~(1u << 23);
  }
  if (!os_amx) edx7 &= ~((1u << 22) | (1u << 24) | (1u << 25));
  feature(edx1 & (1u << 26), "sse2");
  feature(ecx1 & (1u << 19), "sse4_1");
  feature(ecx1 & (1u << 20), "sse4_2");
  feature(ecx1 & (1u << 28), "avx");
  feature(ecx1 & (1u << 12), "fma");
  feature(ecx1 & (1u << 29), "f16c");
  feature(ebx7 & (1u << 5), "avx2");
  feature(ebx7 & (1u << 16), "avx512f");
  feature(ebx7 & (1u << 17), "avx512dq");
  feature(ebx7 & (1u << 30), "avx512bw");
  feature(ebx7 & (1u << 31), "avx512vl");
  feature(ecx7 & (1u << 11), "avx512_vnni");
  feature(eax7_1 & (1u << 5), "avx512_bf16");
  feature(eax7_1 & (1u << 4), "avx_vnni");
  feature(edx7 & (1u << 23), "avx512_fp16");
  feature(edx7 & (1u << 24), "amx_tile");
  feature(edx7 & (1u << 22), "amx_bf16");
  feature(edx7 & (1u << 25), "amx_int8");
  Cpuid(0x80000000, 0, r);
  if (r[0] >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      Cpuid(0x80000002 + i, 0, r);
      std::memcpy(brand + 16 * i, r, 16);
    }
    std::string name = brand;
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    cpu.Set("model_name", name);
  }
  cpu.Set("architecture", "x86_64");
#elif defined(__aarch64__)
  cpu.vendor = "ARM";
  cpu.vendor_id = 0x13b5;
  feature(true, "neon");
  cpu.Set("architecture", "aarch64");
#else
  cpu.vendor = "unknown";
#endif
  auto [cores, threads] = CountCoresAndThreads(sysfs_root);
  if (threads == 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (cores == 0) cores = threads;
  cpu.Set("cores", std::to_string(cores));
  cpu.Set("threads", std::to_string(threads));
  cpu.Set("isa", isa);
  cpu.Set("discovered_by", "cpuid");
  return cpu;
}

}  // namespace nxrt
