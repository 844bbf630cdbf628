// "HOST:PORT" addresses of supervisors and nodes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "atl/core/expected.hpp"

namespace atl {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
  std::string to_string() const {
    bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
};

Expected<HostPort> parse_host_port(std::string_view text);

}  // namespace atl
