// The dashboard's relay to a service on the head pod's loopback (Ray's
// dashboard at /ray/): each request goes to the service with the service's
// own credentials, its answer streams back as it comes (a log download or a
// follow is never held whole in memory). The rules of what passes are
// core/http_proxy.hpp's; this is the I/O.
//
// Every request runs its upstream leg on a thread of its own, handing the
// answer to the dashboard's thread through a bounded queue (1 MiB: a slow
// browser slows the service's sending, never the head's memory). The
// service must send its status line within 30 s; a body may idle up to 60 s
// between pieces. A browser that leaves, or the dashboard stopping, ends
// the upstream leg at once.
//
// WebSocket upgrades are refused (501): Ray's web UI does not use them
// (only `ray job logs --follow` does, which runs inside the job).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace atl::headnode {

struct ServiceTarget {
  std::string name;    // in errors: "Ray's dashboard"
  std::string prefix;  // "/ray"
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string auth;    // the Authorization the service wants ("Bearer T"); empty: none
  std::string inside;  // how to act on it from inside the job (in the dashboard's 405)
  // Paths under the prefix (regexes, "/data/plugin/.*") whose POSTs are
  // reads and pass (TensorBoard asks for its data by POST); every other
  // method but GET and HEAD is refused.
  std::vector<std::string> post_reads{};
};

class ServiceProxy {
 public:
  explicit ServiceProxy(ServiceTarget target);
  ~ServiceProxy();  // ends every upstream leg still running and joins it
  ServiceProxy(const ServiceProxy&) = delete;
  ServiceProxy& operator=(const ServiceProxy&) = delete;

  const ServiceTarget& target() const;
  // Answers `req` (whose path is under the prefix) from the service.
  void handle(const httplib::Request& req, httplib::Response& res);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace atl::headnode
