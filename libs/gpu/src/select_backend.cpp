#include "atl/gpu/backend.hpp"
#include "atl/gpu/nccl_allreduce.hpp"

namespace atl::gpu {

#ifdef ATL_GPU_WITH_CUDA
Expected<std::unique_ptr<Backend>> make_cuda_backend();  // why not, when no device answers
bool cuda_compiled_in() { return true; }
BackendChoice choose_backend() {
  auto cuda = make_cuda_backend();
  if (cuda) return {std::move(*cuda), ""};
  return {make_cpu_backend(), cuda.error()};
}
#else
bool cuda_compiled_in() { return false; }
BackendChoice choose_backend() { return {make_cpu_backend(), "this build of atl has no CUDA"}; }
#endif

std::unique_ptr<Backend> make_backend() { return choose_backend().backend; }

Status require_gpus(const std::string& backend_name, int devices, int expected,
                    const std::string& cuda_note) {
  if (expected <= 0) return Ok{};
  const std::string declared =
      "the pod declares " + std::to_string(expected) + " GPU" + (expected == 1 ? "" : "s");
  if (backend_name != "cuda")
    return make_error(declared + " but CUDA sees none" +
                      (cuda_note.empty() ? std::string() : " (" + cuda_note + ")"));
  if (devices != expected)
    return make_error(declared + " but CUDA sees " + std::to_string(devices));
  return Ok{};
}

#ifndef ATL_GPU_WITH_NCCL
// Built without NCCL: GPU allreduce is unavailable, and callers say so (the
// TCP ring still serves nodes without GPUs).
bool nccl_compiled_in() { return false; }
Expected<std::unique_ptr<NcclAllreduce>> NcclAllreduce::create(const NcclSetup&) {
  return make_error("this build of atl has no NCCL");
}
Expected<std::string> nccl_make_unique_id() { return make_error("this build of atl has no NCCL"); }
std::int64_t least_free_device_memory(const std::vector<int>&) { return 0; }
#endif

}  // namespace atl::gpu
