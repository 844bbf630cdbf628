// The web terminal's WebSocket on the dashboard's own connection: cpp-httplib
// 0.11 has no WebSocket, so the handler of GET /api/terminal/POD takes the
// connection it was called on (the TLS session httplib made, or the plain
// socket) and speaks RFC 6455 on it (core/websocket.hpp) until the terminal
// ends; httplib's own reply afterwards finds the connection closed.
//
// Browser -> head: text frames "i<keystrokes>" and "r<rows>,<cols>".
// Head -> browser: binary frames of the shell's output; a close frame whose
// reason says why it ended (1000: the shell ended; 1001: the session, the
// pod or the head went away; 1002/1009: the browser broke the protocol).
#pragma once

#include <httplib.h>

#include <functional>
#include <optional>
#include <string>

#include "terminal_relay.hpp"

namespace atl::headnode {

// The connection a request came on; nothing when it cannot be found.
struct RawConnection {
  SSL* ssl = nullptr;  // TLS: httplib's session on it
  int fd = -1;
};
std::optional<RawConnection> raw_connection_of(const httplib::Request& req);

// Serves the terminal on `conn` after sending the 101 for `key`. `still_ok`
// is asked at least once a second, and as soon as `stop_fd` is readable: a
// reason to end (the session ended, the head stops), or nothing. Returns
// when the terminal has ended, having closed `link` with the reason.
void serve_terminal(RawConnection conn, const std::string& key, TerminalLink& link, int stop_fd,
                    const std::function<std::optional<std::string>()>& still_ok);

}  // namespace atl::headnode
