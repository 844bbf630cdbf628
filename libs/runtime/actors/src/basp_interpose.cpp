// A member function of CAF 0.17's BASP broker, replaced by atl's processes
// (as openssl_interpose.cpp replaces OpenSSL's calls): libcaf_io calls it
// through its PLT, so the executable's definition (and libatl.so's, before
// libcaf_io in its own lookup scope) is the one that runs.
//
// For every node it meets, CAF 0.17's basp_broker::learned_new_node spawns a
// helper actor that asks that node for its spawn server (for remote_spawn)
// and keeps a handle to it in a map that is never purged: ~1.1 kB that the
// head never got back per connection of a new process. Every `atlctl status`
// is a new process, so 10,000 of them grew the head by ~11 MB (measured with
// heaptrack: 250 kB of 274 kB left after 232 calls came from here). atl never
// spawns actors remotely, so the helper is not made at all.
#include <caf/io/basp_broker.hpp>

void caf::io::basp_broker::learned_new_node(const caf::node_id&) {}

namespace atl {

// Referenced from actor_system_setup.cpp so that the linker keeps this object.
bool basp_spawn_server_skip_linked() { return true; }

}  // namespace atl
