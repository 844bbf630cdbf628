// The lobby of the head's HTTP servers (dashboard, /metrics): a connection
// accepted on their port waits here, at no cost, until it sends its first
// bytes; only then does it reach a server thread. Idle ones leave after a
// deadline, and at most kLobbySize wait (the oldest gives way).
#pragma once

namespace atl::headnode {

// From now on accept() on `listening_fd` returns only connections that have
// spoken (or hung up). Call once the server is bound, before it serves.
void hold_idle_connections(int listening_fd);

// The server is about to stop (call before it closes its socket): the
// accept loop returns at once and takes no connection from then on.
void close_lobby(int listening_fd);

// The server's accept thread has ended: connections still waiting are closed.
void release_idle_connections(int listening_fd);

}  // namespace atl::headnode
