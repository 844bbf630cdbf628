#include "atl/gpu/backend.hpp"
#include "atl/gpu/nccl_allreduce.hpp"

namespace atl::gpu {

#ifdef ATL_GPU_WITH_CUDA
std::unique_ptr<Backend> make_cuda_backend();  // null when no device answers
bool cuda_compiled_in() { return true; }
std::unique_ptr<Backend> make_backend() {
  if (auto cuda = make_cuda_backend()) return cuda;
  return make_cpu_backend();
}
#else
bool cuda_compiled_in() { return false; }
std::unique_ptr<Backend> make_backend() { return make_cpu_backend(); }
#endif

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
