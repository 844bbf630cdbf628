#include "atl/gpu/backend.hpp"

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

}  // namespace atl::gpu
