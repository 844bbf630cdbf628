// The head's dashboard: pages (job, pods, ranks, live logs, debug runs,
// burn/check charts), a JSON API under /api/ and Prometheus text at /metrics,
// all behind the job's dashboard token, over HTTPS with the job's certificate
// when TLS is on. Read-only (atlctl acts) but for the web terminal: a shell in
// a pod, for a logged-in browser session only (terminal_socket.hpp).
//
//   GET  /login[?token=T]  the login page; with a right token: a session cookie
//   POST /login            form field `token`; POST /logout ends the session
//   GET  /                 the page (app.js draws the views from the API)
//   GET  /api/status       atlctl status --json          GET /api/events  the timeline
//        ?ranks=N&rank_offset=K&pods=N&pod_offset=K  a page of the ranks and pods
//   GET  /api/logs         [{stream, bytes}] of <state-dir>/logs
//   GET  /api/logs/S?offset=N[&max=B] | ?tail=N  {text, next_offset}
//   GET  /api/logs/S/follow?offset=N  Server-Sent Events: its lines as it grows (sse.hpp)
//   GET  /api/runs/N/report   the burn figures in debug run N's output, per stream
//   GET  /metrics          Prometheus text (a scraper sends Authorization: Bearer TOKEN)
//   GET  /api/session      {"csrf", "terminal", "tensorboard"}: the session's CSRF token
//   GET  /api/terminal/POD a WebSocket to a shell in POD (session, Origin, ?csrf=)
//   GET  /tensorboard/...  --tensorboard-logdir: TensorBoard, relayed (its data POSTs too)
//   GET  /ray/...          ray mode: Ray's dashboard (on the head pod's loopback,
//                          with the job's Ray token), relayed (service_proxy.hpp);
//                          other methods 405: its job API acts, the dashboard reads
// Anything without a valid session or bearer token: 401 (API, /metrics,
// /ray/: its page is the login form, which comes back to it) or a redirect
// to /login (pages). /login?next=PATH comes back to PATH once logged in. Log reads go to the files
// directly, never through the log sink: followers cost the job's log path nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "atl/core/expected.hpp"
#include "atl/os/tls_credentials.hpp"
#include "head_queries.hpp"
#include "service_proxy.hpp"
#include "terminal_relay.hpp"

namespace atl::headnode {

struct DashboardConfig {
  std::string bind = "127.0.0.1";
  int port = 8265;          // 0: any free port
  bool port_given = false;  // a default port that is taken falls back to any free one
  std::optional<os::TlsFiles> tls;
  std::string token;
  std::string logs_dir;
  std::string job_id;
};

class DashboardServer {
 public:
  explicit DashboardServer(DashboardConfig config);
  ~DashboardServer();  // ends followers, stops serving, joins its threads
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  // Listens (answers nothing until serve); the port. `note` tells of a
  // fallback from a taken default port.
  Expected<std::uint16_t> bind(std::string* note);
  // Serves a service on the head pod's loopback at target.prefix, to
  // logged-in sessions, GET only (Ray's dashboard at /ray/). Before serve.
  void relay(ServiceTarget target);
  // The web terminal into the pods (GET /api/terminal/POD): off unless given.
  void offer_terminals(std::shared_ptr<TerminalRelays> relays);
  void serve(std::shared_ptr<HeadQueries> queries);
  const char* scheme() const;  // "https" or "http"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace atl::headnode
