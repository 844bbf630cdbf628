// CAF node ids of local pods (node_id_interpose.cpp): pods that share a host
// and a pid (each PID 1 of its own namespace) are different nodes.
#define CAF_SUITE node_ids
#include <caf/all.hpp>
#include <caf/test/unit_test.hpp>
#include <cstdlib>

namespace atl {
bool node_id_salt_linked();
}

namespace {

// The host's part of a node id, less its last byte: CAF 0.17 counts the
// actor systems of one process there (a new id per call of local()).
std::string host_part() {
  caf::actor_system_config cfg;
  const auto id = to_string(caf::node_id::default_data::local(cfg));
  return id.substr(0, 38) + id.substr(id.find('#'));  // 19 bytes in hex, then #pid
}

}  // namespace

CAF_TEST(two local pods with the same pid are two nodes) {
  CAF_REQUIRE(atl::node_id_salt_linked());
  ::unsetenv("ATL_NODE_SALT");
  const auto host = host_part();
  CAF_CHECK_EQUAL(host, host_part());  // CAF's own id: the host's and this pid
  ::setenv("ATL_NODE_SALT", "jo-x-worker-0#1", 1);
  const auto pod0 = host_part();
  CAF_CHECK_EQUAL(pod0, host_part());
  ::setenv("ATL_NODE_SALT", "jo-x-worker-1#1", 1);
  const auto pod1 = host_part();
  ::setenv("ATL_NODE_SALT", "jo-x-worker-0#2", 1);  // pod 0, recreated
  const auto pod0_again = host_part();
  ::unsetenv("ATL_NODE_SALT");
  CAF_CHECK_NOT_EQUAL(pod0, pod1);
  CAF_CHECK_NOT_EQUAL(pod0, pod0_again);
  CAF_CHECK_NOT_EQUAL(pod0, host);
  // The same pid in each: the salt alone tells them apart.
  CAF_CHECK_EQUAL(pod0.substr(pod0.find('#')), host.substr(host.find('#')));
}
