#include "atl/core/host_port.hpp"

#include "parse_util.hpp"

namespace atl {

Expected<HostPort> parse_host_port(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return make_error("bad address " + detail::quote(text) + ": expected HOST:PORT");
  }
  auto port = detail::parse_uint(text.substr(colon + 1));
  if (!port || *port == 0 || *port > 65535) {
    return make_error("bad port in address " + detail::quote(text) + ": expected 1-65535");
  }
  std::string_view host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return HostPort{std::string(host), static_cast<std::uint16_t>(*port)};
}

}  // namespace atl
