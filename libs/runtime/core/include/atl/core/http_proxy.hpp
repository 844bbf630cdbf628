// What atl's dashboard passes between a browser and a service it serves
// under a path of its own (Ray's dashboard at /ray/): the target, and which
// headers go each way. Pure; the dashboard's HTTP server does the I/O.
//
// The rules, and why:
// - The service sees a path of its own: "/ray/api/jobs/?x=1" -> "/api/jobs/?x=1".
// - atl's credentials never reach the service, the service's credentials
//   never reach the browser: the browser's Cookie and Authorization are
//   dropped and the service's own (e.g. Ray's job token) put in; the
//   service's Set-Cookie is dropped (its cookies would land on atl's origin).
// - Hop-by-hop headers (RFC 9110 7.6.1: Connection and those it names,
//   Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-*) and the
//   framing (Content-Length, Host) are each leg's own, and so is the
//   content coding: the service is asked for identity (no Accept-Encoding),
//   the dashboard compresses as it would its own pages.
// - A redirect to one of the service's own paths stays under the prefix.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The service's target for a request target under `prefix` (no trailing
// slash: "/ray"). An error (the request is refused) when it is not under
// the prefix, or holds bytes no request line may (controls, spaces).
Expected<std::string> proxied_target(std::string_view target, std::string_view prefix);

// The request's headers as the service gets them: `auth` (a whole header
// value such as "Bearer T"; empty: none) as its Authorization, the browser's
// address in X-Forwarded-For, the prefix in X-Forwarded-Prefix.
HeaderList upstream_request_headers(const HeaderList& in, const std::string& auth,
                                    const std::string& client_addr, std::string_view prefix);

// The service's response headers as the browser gets them.
HeaderList downstream_response_headers(const HeaderList& in, std::string_view prefix);

// A request to switch protocols (a WebSocket): not relayed.
bool asks_upgrade(const HeaderList& in);

// One field of a multipart/form-data request (RFC 7578) as the dashboard's
// HTTP library hands it over: that library parses such a body into its
// fields and keeps no raw bytes, so the relay writes the body again.
struct FormPart {
  std::string name;
  std::string filename;      // empty: a plain field, not a file
  std::string content_type;  // empty: none given
  std::string content;
};

// The fields as a multipart/form-data body under `boundary` (one that is in
// no field's content: multipart_boundary), in their order. Names and file
// names are quoted as browsers do (", CR and LF percent-encoded).
std::string multipart_body(const std::vector<FormPart>& parts, const std::string& boundary);

// A boundary for `parts`: "atl-" and `seed` in hex, lengthened until no
// field holds it.
std::string multipart_boundary(const std::vector<FormPart>& parts, std::uint64_t seed);

}  // namespace atl
