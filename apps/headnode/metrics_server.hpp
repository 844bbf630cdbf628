// The head's Prometheus endpoint: GET /metrics on its own port (bound to
// 127.0.0.1 unless told otherwise, no authentication: only what a scraper on
// the pod, or a port-forward, reaches). The dashboard serves the same text
// behind its token. Each scrape asks the supervisor for its status (as atlctl
// status --json) and the log sink for its counters (HeadQueries); a scrape
// never waits more than 6 s.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "atl/core/expected.hpp"
#include "head_queries.hpp"

namespace atl::headnode {

class MetricsServer {
 public:
  explicit MetricsServer(std::shared_ptr<HeadQueries> queries);
  ~MetricsServer();  // stops serving and joins its threads
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Listens on bind:port (0: any free port) and serves from a thread; the port.
  Expected<std::uint16_t> start(const std::string& bind, int port);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace atl::headnode
