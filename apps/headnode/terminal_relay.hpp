// The head's side of a web terminal, for the dashboard's threads (no CAF in
// this header): open() asks the supervisor for a terminal into a pod, and a
// TerminalLink is then the pipe between the browser's WebSocket and the pod's
// terminal host (libs/runtime/actors terminal_host.hpp). One relay actor per
// link does the messaging; the HTTP thread only anon_sends to it and waits on
// wake_fd() (CAF 0.17 and long-lived foreign threads: see head_queries.hpp).
#pragma once

#include <caf/fwd.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "atl/core/expected.hpp"

namespace atl::headnode {

// A refusal of open(): the HTTP status it maps to and the supervisor's line.
struct TerminalRefusal {
  int http_status = 503;  // 409: refused (off, limit, no such pod); 503: failed
  std::string line;
};

class TerminalLink {
 public:
  struct Impl;
  explicit TerminalLink(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  ~TerminalLink();  // close("the viewer left") unless closed already
  TerminalLink(const TerminalLink&) = delete;
  TerminalLink& operator=(const TerminalLink&) = delete;

  std::int64_t id() const;
  int wake_fd() const;  // readable while output or the end waits in take()
  struct Taken {
    std::string output;                // what the shell printed since the last take
    std::optional<std::string> ended;  // set once: why the terminal ended
    bool shell_ended = false;          // ...and it ended by itself (its shell exited)
  };
  Taken take();
  void input(std::string bytes);
  // kTerminalWindow bytes of input are on their way to the pod: read no
  // more of the viewer's until the pod took some (wake_fd says when).
  bool input_full() const;
  void resize(int rows, int cols);
  void ack(std::int64_t bytes);  // the browser has these: the pod may send more
  // Ends the terminal from this side: the pod hangs the shell up, the
  // timeline says `why`. Once; later calls do nothing.
  void close(const std::string& why);

 private:
  std::shared_ptr<Impl> impl_;
};

class TerminalRelays {
 public:
  TerminalRelays(caf::actor_system& sys, const caf::actor& supervisor);
  // Waits up to 15 s for the supervisor and the pod; less once stopping() says so.
  std::variant<std::unique_ptr<TerminalLink>, TerminalRefusal> open(
      const std::string& pod, const std::string& who, int rows, int cols,
      const std::function<bool()>& stopping);

 private:
  caf::actor_system& sys_;
  std::shared_ptr<caf::actor> supervisor_;
};

}  // namespace atl::headnode
