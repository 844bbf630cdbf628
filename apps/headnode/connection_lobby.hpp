// The lobby of the head's HTTP servers (dashboard, /metrics): a connection
// accepted on their port waits here, at no cost, until it sends its first
// bytes; only then does it reach a server thread. Idle ones leave after a
// deadline, and at most kLobbySize wait (the oldest gives way).
#pragma once

namespace atl::headnode {

// From now on accept() on `listening_fd` returns only connections that have
// spoken (or hung up). Call once the server is bound, before it serves.
void hold_idle_connections(int listening_fd);

// The server's socket is closing: connections still waiting are closed.
void release_idle_connections(int listening_fd);

}  // namespace atl::headnode
