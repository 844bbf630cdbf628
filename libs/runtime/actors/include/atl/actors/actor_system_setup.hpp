// The actor-system configuration every atl process uses: message types, the
// io middleman, heartbeats (on for *every* node or none) and mutual TLS.
#pragma once

#include <sys/socket.h>

#include <caf/actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "atl/os/tls_credentials.hpp"

namespace atl {

// Registers atl's message types with a config (AtlSystemConfig does; tests
// with CAF's deterministic scheduler use their own config).
void add_atl_message_types(caf::actor_system_config& cfg);

class AtlSystemConfig : public caf::actor_system_config {
 public:
  // With credentials, every connection is mutual TLS: both ends present a
  // certificate signed by the job's CA and verify the other's, so no byte
  // from a stranger reaches CAF's BASP parser. Without (--insecure), plain TCP.
  explicit AtlSystemConfig(const std::optional<os::TlsFiles>& tls);

  bool secure() const { return secure_; }

 private:
  bool secure_ = false;
};

// Publishes `actor` at bind:port (0 = any free port) over TLS when the system
// has credentials; returns the bound port.
caf::expected<std::uint16_t> publish_actor(caf::actor_system& sys, const caf::actor& actor,
                                           std::uint16_t port, const std::string& bind);

// How long connect_actor waits for a peer that took the connection to finish
// its handshake.
inline constexpr std::chrono::milliseconds kConnectPatience = std::chrono::seconds(10);

// Connects to the actor published at host:port, over TLS when the system has
// credentials (a peer without the job's certificate fails the handshake). A
// peer that takes the connection and answers late is waited for `patience`.
caf::expected<caf::actor> connect_actor(caf::actor_system& sys, const std::string& host,
                                        std::uint16_t port,
                                        std::chrono::milliseconds patience = kConnectPatience);

// What an actor's exception handler says about the exception it caught.
std::string describe_exception(const std::exception_ptr& e);

// connect_actor's error to host:port as one line; a failed TLS handshake
// says what to check.
std::string describe_connect_error(caf::actor_system& sys, const caf::error& err,
                                   const std::string& host, std::uint16_t port);

// accept() for a process that interposes it (the head): on a listening socket
// CAF polls, a new connection past its source address's budget (250 a
// second, 500 at once: SourceBudget) is closed before CAF or OpenSSL sees it
// and the next one taken; any other socket goes straight to `real`
// (openssl_interpose.cpp).
int accept_within_budget(int fd, sockaddr* addr, socklen_t* len,
                         int (*real)(int, sockaddr*, socklen_t*));

// The TLS handshakes of CAF's connections waiting for their peers now (the
// gate holds at most 256, each up to its deadline); other TLS in the process
// (the dashboard's) never counts (openssl_interpose.cpp).
std::size_t tls_handshakes_waiting();

}  // namespace atl
