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
  bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  // A name or IPv4 address: letters, digits, '.', '-', '_'; an IPv6 address
  // (hex digits, ':' and '.') only in brackets, as in [::1]:6380.
  auto name_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
  };
  auto v6_char = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
           c == '.';
  };
  bool ok = !host.empty() && host.size() <= 253;
  for (char c : host) ok = ok && (bracketed ? v6_char(c) : name_char(c));
  if (bracketed && host.find(':') == std::string_view::npos) ok = false;
  if (!ok) {
    return make_error("bad host in address " + detail::quote(text) +
                      ": expected a name, an IPv4 address or [IPv6]");
  }
  return HostPort{std::string(host), static_cast<std::uint16_t>(*port)};
}

}  // namespace atl
