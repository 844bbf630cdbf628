// The head's local door: an abstract Unix socket beside its TCP port, for
// atlctl in the head's own pod (bench/results/launch.md: a TLS connection
// made by a fresh process is most of `atlctl status`'s time).
//
// Abstract names live in the network namespace, as ports do, and leave
// nothing behind when the head ends. Who may enter is decided by the
// kernel's word (SO_PEERCRED), not by a file's mode: the head's own user, or
// root, both of which can read the job's TLS key anyway, so the door admits
// no one TLS would refuse. atlctl checks the other way too: a door whose
// listener is not its user (or root) is not used.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/door_frame.hpp"
#include "atl/core/expected.hpp"

namespace atl::os {

// The door of a head listening on ip:port ("atl-door/<ip>:<port>"; `ip` as
// inet_ntop writes it, "0.0.0.0" for every address).
std::string door_name(const std::string& ip, std::uint16_t port);

// The door a workernode keeps for the head at head_ip:port, relaying over its
// own connection ("atl-door/via/<ip>:<port>"): atlctl in a worker pod.
std::string relay_door_name(const std::string& head_ip, std::uint16_t port);

// The listening socket of the head bound to `bind` (a name or an address)
// at `port`: non-blocking, close-on-exec.
Expected<int> listen_door(const std::string& bind, std::uint16_t port);
// A workernode's relay door for the head at head:port (a name or an address).
Expected<int> listen_relay_door(const std::string& head, std::uint16_t port);

// The job's CA as a door's hello carries it (both sides): the text of
// `ca_path`, "" for an --insecure job (no path); nothing when the file cannot
// be read (then no door: a hello could not be checked).
std::optional<std::string> door_ca(const std::string& ca_path);

// The uid of the process at the other end of a Unix socket.
std::optional<uid_t> peer_uid(int fd);
// Whether that process is this one's user or root.
bool peer_is_trusted(int fd);

// Whether `address` (numeric) is one of this network namespace's own:
// loopback, or an interface's.
bool is_own_address(const std::string& address);

// A connected door to the head at host:port, whose owner is trusted: the
// head's own when host names an address of this network namespace, else (or
// failing that) a workernode's relay to that head in this namespace. Nothing
// otherwise (the caller goes over TCP). Blocking, close-on-exec.
std::optional<int> open_door(const std::string& host, std::uint16_t port);

// Writes all of `bytes` (blocking); an error names what failed.
Status write_door(int fd, std::string_view bytes);

// Reads until `reader` has a whole frame or `deadline` passes.
enum class DoorRead { frame, closed, timeout, error };
DoorRead read_door_frame(int fd, DoorFrameReader& reader, std::string& frame,
                         std::chrono::steady_clock::time_point deadline,
                         std::string* why = nullptr);

}  // namespace atl::os
