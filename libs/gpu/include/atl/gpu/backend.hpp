// The GPU work behind burns and checks, behind one small interface: a CUDA
// implementation (cuBLAS, CUDA runtime) when built with CUDA and a device is
// present, and a CPU implementation so every caller runs and is tested anywhere.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/gpu/timing.hpp"

namespace atl::gpu {

struct GemmConfig {
  int size = 8192;   // m = n = k
  bool bf16 = true;  // CUDA: bf16 inputs, fp32 accumulate; else fp32 (tf32 if allowed)
  bool allow_tf32 = false;
  int repeats = 3;  // identical GEMMs per round, each timed and compared with the first result
  // Random inputs, uniform in [-1, 1) (a burn's and a benchmark's: real
  // power and real bit patterns, spot-checked against a double reference
  // with a tolerance), or small integers whose products are exact (check's
  // known-answer GEMM: every element must be exactly right).
  bool random_inputs = true;
  // Untimed GEMMs for at least this long before the timed ones (clocks up).
  std::chrono::milliseconds warmup{0};
  // Results are written round-robin over this fraction of the free memory
  // (gpu-burn's scheme: the whole HBM is written and read under heat); 0:
  // one result buffer.
  double result_memory_fraction = 0;
};

struct GemmResult {
  int device = 0;
  double tflops = 0;  // from the median repeat
  TimingSummary timing;
  std::int64_t result_bytes = 0;  // memory the results were spread over
  std::int64_t differing = 0;     // elements differing between the repeats
  std::int64_t nans = 0;
  std::int64_t wrong = 0;  // elements off the exact reference (spot check)
  bool ok() const { return differing == 0 && nans == 0 && wrong == 0; }
};

struct TransferResult {
  int device = 0;
  std::int64_t bytes = 0;
  double h2d_gbps = 0;
  double d2h_gbps = 0;
  double bidir_gbps = 0;     // both directions at once, total
  double d2d_gbps = 0;       // device to device on one GPU (bytes copied per second)
  bool checksum_ok = false;  // every copy carried the bytes unchanged
};

struct MemoryTestResult {
  int device = 0;
  std::int64_t bytes = 0;      // how much was tested
  std::int64_t bad_words = 0;  // 32-bit words that read back wrong, over all patterns
  int patterns = 0;
  bool ok() const { return bad_words == 0; }
};

struct KnownAnswerResult {
  int device = 0;
  std::int64_t elements = 0;
  std::int64_t wrong = 0;  // elements that differ from the host's answer
  bool ok() const { return wrong == 0; }
};

// The known-answer test's fixed parameters (device_math.hpp's known_answer).
inline constexpr std::uint32_t kKnownAnswerSeed = 0x5eed1234u;
inline constexpr int kKnownAnswerRounds = 64;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cuda" or "cpu"
  virtual int device_count() const = 0;
  // Where the device is and who it is: PCI address ("0000:3B:00.0", the form
  // NVML and the kernel log use) and UUID ("GPU-8f6c..."); empty on the CPU.
  virtual std::string pci_bus_id(int device) const = 0;
  virtual std::string uuid(int device) const = 0;
  virtual Expected<GemmResult> gemm(int device, const GemmConfig& config) = 0;
  virtual Expected<TransferResult> transfer(int device, std::int64_t bytes) = 0;
  // Writes each of device_math.hpp's memory patterns over `fraction` of the
  // free memory and reads it back (on a GPU: kernels write and compare, only
  // the count of bad words comes back).
  virtual Expected<MemoryTestResult> memory_test(int device, double fraction) = 0;
  // Runs atl's known-answer kernel over `elements` values on every SM (the
  // CPU: every core) and compares each with the answer computed on the host.
  virtual Expected<KnownAnswerResult> known_answer(int device, std::int64_t elements) = 0;
};

std::unique_ptr<Backend> make_cpu_backend(int threads = 0);

// CUDA when compiled in and a device answers; otherwise the CPU backend and,
// in cuda_note, why not CUDA ("cudaGetDeviceCount: no CUDA-capable device is
// detected", "built without CUDA"): a fallback is never silent.
struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string cuda_note;  // empty when the backend is CUDA
};
BackendChoice choose_backend();
std::unique_ptr<Backend> make_backend();  // choose_backend().backend
bool cuda_compiled_in();

// The no-fallback rule: a node that declares GPUs (expected > 0) is burned
// and checked on them or fails; expected < 0 (by hand) or 0 (a CPU pod)
// accepts whatever backend was chosen. The error says what CUDA said.
Status require_gpus(const std::string& backend_name, int devices, int expected,
                    const std::string& cuda_note);

}  // namespace atl::gpu
