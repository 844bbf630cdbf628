// A fake NVML (libnvidia-ml.so.1's entry points the GPU watch and the
// checks use), fed with recorded values: the tests point $ATL_NVML_LIBRARY
// at it and $ATL_FAKE_NVML at a file they write, one fact a line, read
// again at every call:
//
//   gpus 2                      GPUs shown (none: 0)
//   uuid 0 GPU-0a1b...          a GPU's UUID (default GPU-fake-N)
//   ecc 0 3                     volatile uncorrected ECC count of GPU 0
//   remap 1 0 2 1 0             GPU 1's remapped rows: corrected, uncorrected, pending, failed
//   lost 1                      GPU 1 answers NVML_ERROR_GPU_IS_LOST
//   xid 0 79                    an Xid event on GPU 0 (each delivered once, in order)
//   dbe 1                       a double-bit ECC event on GPU 1 (likewise)
//   no_events                   event registration is refused
//   init_fails                  nvmlInit_v2 fails
//
// The real library's layouts and codes (nvml.h); nothing else.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Event {
  unsigned gpu;
  unsigned long long type, data;
};

struct Facts {
  unsigned gpus = 0;
  std::vector<std::string> uuids;
  std::vector<unsigned long long> ecc;
  std::vector<std::vector<unsigned>> remap;
  std::vector<bool> lost;
  std::vector<Event> events;
  bool no_events = false, init_fails = false;
};

Facts read_facts() {
  Facts f;
  const char* path = std::getenv("ATL_FAKE_NVML");
  if (!path) return f;
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  for (const auto& l : lines) {
    std::istringstream words(l);
    std::string key;
    words >> key;
    if (key == "gpus") words >> f.gpus;
  }
  f.uuids.resize(f.gpus);
  for (unsigned i = 0; i < f.gpus; ++i) f.uuids[i] = "GPU-fake-" + std::to_string(i);
  f.ecc.assign(f.gpus, 0);
  f.remap.assign(f.gpus, {0, 0, 0, 0});
  f.lost.assign(f.gpus, false);
  for (const auto& l : lines) {
    std::istringstream words(l);
    std::string key;
    unsigned gpu = 0;
    words >> key;
    if (key == "no_events") f.no_events = true;
    if (key == "init_fails") f.init_fails = true;
    if (key == "gpus" || key == "no_events" || key == "init_fails" || !(words >> gpu) ||
        gpu >= f.gpus)
      continue;
    if (key == "uuid") words >> f.uuids[gpu];
    if (key == "ecc") words >> f.ecc[gpu];
    if (key == "remap")
      for (auto& v : f.remap[gpu]) words >> v;
    if (key == "lost") f.lost[gpu] = true;
    if (key == "xid") {
      unsigned long long xid = 0;
      words >> xid;
      f.events.push_back({gpu, 0x8, xid});
    }
    if (key == "dbe") f.events.push_back({gpu, 0x2, 0});
  }
  return f;
}

constexpr int kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3, kUninitialized = 1,
              kTimeout = 10, kGpuIsLost = 15, kUnknown = 999;

// A device handle is its index + 1; an event set, this one.
int event_set_tag;
std::size_t delivered = 0;

int gpu_of(void* dev, const Facts& f, unsigned& gpu) {
  auto i = reinterpret_cast<std::uintptr_t>(dev);
  if (i == 0 || i > f.gpus) return kInvalidArgument;
  gpu = static_cast<unsigned>(i - 1);
  return f.lost[gpu] ? kGpuIsLost : kSuccess;
}

struct EventData {
  void* device;
  unsigned long long eventType, eventData;
  unsigned gpuInstanceId, computeInstanceId;
};

}  // namespace

extern "C" {

// Events are delivered afresh to each initialisation (each test's watcher).
int nvmlInit_v2() {
  delivered = 0;
  return read_facts().init_fails ? kUnknown : kSuccess;
}
int nvmlShutdown() { return kSuccess; }

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = read_facts().gpus;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  Facts f = read_facts();
  if (i >= f.gpus) return kInvalidArgument;
  if (f.lost[i]) return kGpuIsLost;
  *dev = reinterpret_cast<void*>(static_cast<std::uintptr_t>(i) + 1);
  return kSuccess;
}

int nvmlDeviceGetUUID(void* dev, char* out, unsigned length) {
  Facts f = read_facts();
  unsigned gpu = 0;
  if (int rc = gpu_of(dev, f, gpu)) return rc;
  std::snprintf(out, length, "%s", f.uuids[gpu].c_str());
  return kSuccess;
}

int nvmlDeviceGetTotalEccErrors(void* dev, int type, int counter, unsigned long long* count) {
  Facts f = read_facts();
  unsigned gpu = 0;
  if (int rc = gpu_of(dev, f, gpu)) return rc;
  if (type != 1 || counter != 0) return kNotSupported;
  *count = f.ecc[gpu];
  return kSuccess;
}

int nvmlDeviceGetRemappedRows(void* dev, unsigned* corrected, unsigned* uncorrected,
                              unsigned* pending, unsigned* failed) {
  Facts f = read_facts();
  unsigned gpu = 0;
  if (int rc = gpu_of(dev, f, gpu)) return rc;
  *corrected = f.remap[gpu][0];
  *uncorrected = f.remap[gpu][1];
  *pending = f.remap[gpu][2];
  *failed = f.remap[gpu][3];
  return kSuccess;
}

int nvmlEventSetCreate(void** set) {
  *set = &event_set_tag;
  return kSuccess;
}

int nvmlDeviceRegisterEvents(void* dev, unsigned long long types, void* set) {
  Facts f = read_facts();
  unsigned gpu = 0;
  if (set != &event_set_tag) return kInvalidArgument;
  if (int rc = gpu_of(dev, f, gpu)) return rc;
  return f.no_events || !(types & 0x8) ? kNotSupported : kSuccess;
}

int nvmlEventSetWait_v2(void* set, EventData* data, unsigned /*timeout_ms*/) {
  if (set != &event_set_tag) return kUninitialized;
  Facts f = read_facts();
  if (delivered >= f.events.size()) return kTimeout;
  const Event& e = f.events[delivered++];
  std::memset(data, 0, sizeof *data);
  data->device = reinterpret_cast<void*>(static_cast<std::uintptr_t>(e.gpu) + 1);
  data->eventType = e.type;
  data->eventData = e.data;
  return kSuccess;
}

int nvmlEventSetFree(void*) { return kSuccess; }

}  // extern "C"
