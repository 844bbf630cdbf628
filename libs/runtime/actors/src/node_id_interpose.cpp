// A function of CAF 0.17's node ids, replaced by atl's processes (as
// basp_interpose.cpp and openssl_interpose.cpp replace theirs): libcaf_core
// calls it through its PLT, so the executable's definition (and libatl.so's,
// before libcaf_core in its own lookup scope) is the one that runs.
//
// A CAF node id is a hash of the host (its MAC addresses and the root
// file system's UUID, nothing random in Debian's 0.17.6) and the process id.
// Local pods in PID namespaces of their own (headnode --isolate-local-pods)
// share the host and number their processes from 1: every pod's workernode
// was node HASH#1, and the head took two pods for one (the pre-flight's
// probe of pod 0 was answered by pod 1, whose connection the head's proxies
// for "HASH#1" used). So a local pod's processes mix what tells their pod
// apart (ATL_NODE_SALT, set by headnode for each pod it starts, inherited by
// the pod's ranks, tasks and drivers) into the host's part. Elsewhere the id
// is CAF's own.
#include <dlfcn.h>

#include <caf/detail/get_root_uuid.hpp>
#include <cstdlib>
#include <string>

std::string caf::detail::get_root_uuid() {
  using Original = std::string (*)();
  static const auto original =
      reinterpret_cast<Original>(::dlsym(RTLD_NEXT, "_ZN3caf6detail13get_root_uuidB5cxx11Ev"));
  std::string id = original ? original() : std::string();
  if (const char* salt = std::getenv("ATL_NODE_SALT"); salt && *salt) id += std::string("/") + salt;
  return id;
}

namespace atl {

// Referenced from actor_system_setup.cpp so that the linker keeps this object.
bool node_id_salt_linked() { return true; }

}  // namespace atl
