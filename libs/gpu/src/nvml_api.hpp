// The NVML entry points atl uses, declared here: no header or link-time
// dependency on the driver (NVML is dlopen()ed). Values and layouts from
// nvml.h. Private to libs/gpu.
#pragma once

#include <dlfcn.h>

#include <string>

namespace atl::gpu::nvml {

using Device = void*;
using EventSet = void*;
struct EventData {
  Device device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid, for Xid events
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr int kSuccess = 0;
constexpr int kErrorTimeout = 10;
constexpr int kErrorGpuIsLost = 15;
constexpr int kMemoryErrorUncorrected = 1;
constexpr int kVolatileEcc = 0;
constexpr int kTemperatureGpu = 0;
constexpr int kThresholdSlowdown = 1;
constexpr unsigned long long kEventDoubleBitEcc = 0x2;
constexpr unsigned long long kEventXid = 0x8;
constexpr unsigned kUuidLength = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
using InitFn = int (*)();
using ShutdownFn = int (*)();
using CountFn = int (*)(unsigned*);
using HandleByIndexFn = int (*)(unsigned, Device*);
using HandleByPciFn = int (*)(const char*, Device*);
using UuidFn = int (*)(Device, char*, unsigned);
using EccFn = int (*)(Device, int, int, unsigned long long*);
using PendingFn = int (*)(Device, int*);
using RemappedFn = int (*)(Device, unsigned*, unsigned*, unsigned*, unsigned*);
using ReasonsFn = int (*)(Device, unsigned long long*);
using TemperatureFn = int (*)(Device, int, unsigned*);
using UintFn = int (*)(Device, unsigned*);
using SetCreateFn = int (*)(EventSet*);
using RegisterFn = int (*)(Device, unsigned long long, EventSet);
using WaitFn = int (*)(EventSet, EventData*, unsigned int);
using SetFreeFn = int (*)(EventSet);

template <class Fn>
Fn entry(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

// The driver's library, or the one $ATL_NVML_LIBRARY names (a driver
// installed off the loader's path; the tests' fake NVML).
std::string library_path();

}  // namespace atl::gpu::nvml
