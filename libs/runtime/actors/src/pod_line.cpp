#include "atl/actors/pod_line.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <set>
#include <string>

namespace atl {

namespace {

caf::actor basp_broker(caf::actor_system& sys) {
  return sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
}

}  // namespace

void serve_pod_line(caf::actor_system& sys, const caf::actor& supervisor, int fd,
                    std::uint16_t port) {
  // CAF 0.17.6's BASP broker: (publish_atom, scribe_ptr, port, whom, sigs)
  // adds the scribe, publishes `whom` at `port` (already so: the same actor
  // as the TCP listener's) and writes the server's handshake.
  caf::io::scribe_ptr line = sys.middleman().backend().new_scribe(fd);
  caf::anon_send(basp_broker(sys), caf::publish_atom::value, std::move(line), port,
                 caf::actor_cast<caf::strong_actor_ptr>(supervisor), std::set<std::string>{});
}

PodLine connect_pod_line(caf::actor_system& sys, int fd, std::uint16_t port,
                         std::chrono::milliseconds patience) {
  PodLine out;
  out.shutter = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  // (connect_atom, scribe_ptr, port): the client's handshake; answered with
  // the server's node, its actor at `port` and that actor's interface, as
  // remote_actor's TCP connect is.
  caf::io::scribe_ptr line = sys.middleman().backend().new_scribe(fd);
  caf::expected<caf::actor> result{caf::sec::cannot_connect_to_node};
  caf::scoped_actor self{sys};
  self->request(basp_broker(sys), patience, caf::connect_atom::value, std::move(line), port)
      .receive(
          [&](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>& ifs) {
            if (!ptr)
              result = caf::make_error(caf::sec::no_actor_published_at_port);
            else if (!ifs.empty())
              result = caf::make_error(caf::sec::unexpected_actor_messaging_interface);
            else
              result = caf::actor_cast<caf::actor>(std::move(ptr));
          },
          [&](caf::error& err) { result = std::move(err); });
  if (!result) end_pod_line(out.shutter);
  out.supervisor = std::move(result);
  return out;
}

void end_pod_line(int& shutter) {
  if (shutter < 0) return;
  ::shutdown(shutter, SHUT_RDWR);
  ::close(shutter);
  shutter = -1;
}

}  // namespace atl
