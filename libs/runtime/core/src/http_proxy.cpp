#include "atl/core/http_proxy.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace atl {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// The hop-by-hop headers of a message: the fixed ones and those its
// Connection header names (lower case).
std::set<std::string> hop_by_hop(const HeaderList& in) {
  std::set<std::string> names = {"connection",
                                 "keep-alive",
                                 "te",
                                 "trailer",
                                 "upgrade",
                                 "transfer-encoding",
                                 "host",
                                 "content-length",
                                 "proxy-connection",
                                 "proxy-authenticate",
                                 "proxy-authorization"};
  for (const auto& [k, v] : in) {
    if (lower(k) != "connection") continue;
    std::string_view rest = v;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      names.insert(lower(trim(rest.substr(0, comma))));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return names;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether the path part of `rest` (before its query) walks anywhere but
// down: a segment "." or "..", decoded (%2e%2e too), or a separator that
// only decoding shows (%2f, %5c), or a backslash. The service would resolve
// them, after the dashboard's allow-list looked at the raw target.
bool walks_off(std::string_view rest) {
  const std::string_view path = rest.substr(0, rest.find('?'));
  std::string segment;
  auto dot_segment = [&] { return segment == "." || segment == ".."; };
  for (std::size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '%' && i + 2 < path.size() && hex_value(path[i + 1]) >= 0 &&
        hex_value(path[i + 2]) >= 0) {
      c = static_cast<char>(hex_value(path[i + 1]) * 16 + hex_value(path[i + 2]));
      i += 2;
      if (c == '/' || c == '\\' || c == '\0') return true;
    } else if (c == '/') {
      if (dot_segment()) return true;
      segment.clear();
      continue;
    }
    if (c == '\\') return true;
    segment += c;
  }
  return dot_segment();
}

}  // namespace

Expected<std::string> proxied_target(std::string_view target, std::string_view prefix) {
  for (unsigned char c : target)
    if (c <= 0x20 || c == 0x7f) return make_error("the request's path holds a control or space");
  if (target.substr(0, prefix.size()) != prefix)
    return make_error("'" + std::string(target) + "' is not under " + std::string(prefix));
  std::string_view rest = target.substr(prefix.size());
  if (rest.empty()) return std::string("/");
  if (rest.front() == '?') return "/" + std::string(rest);
  if (rest.front() != '/')
    return make_error("'" + std::string(target) + "' is not under " + std::string(prefix) + "/");
  if (walks_off(rest))
    return make_error("'" + std::string(target) +
                      "': a path with '.' or '..' segments or an encoded separator is not "
                      "relayed");
  return std::string(rest);
}

HeaderList upstream_request_headers(const HeaderList& in, const std::string& auth,
                                    const std::string& client_addr, std::string_view prefix) {
  const auto drop = hop_by_hop(in);
  HeaderList out;
  for (const auto& [k, v] : in) {
    const std::string name = lower(k);
    // What says who asked, and from where, is atl's to say: a browser's own
    // claim (a forged X-Forwarded-For) never reaches the service.
    if (drop.count(name) || name == "cookie" || name == "authorization" ||
        name == "x-ray-authorization" || name == "x-forwarded-prefix" ||
        name == "accept-encoding" || name == "x-forwarded-for" || name == "forwarded" ||
        name == "x-forwarded-host" || name == "x-forwarded-proto" || name == "x-real-ip")
      continue;
    out.emplace_back(k, v);
  }
  if (!auth.empty()) out.emplace_back("Authorization", auth);
  if (!client_addr.empty()) out.emplace_back("X-Forwarded-For", client_addr);
  out.emplace_back("X-Forwarded-Prefix", std::string(prefix));
  return out;
}

HeaderList downstream_response_headers(const HeaderList& in, std::string_view prefix) {
  const auto drop = hop_by_hop(in);
  HeaderList out;
  for (const auto& [k, v] : in) {
    const std::string name = lower(k);
    if (drop.count(name) || name == "set-cookie") continue;
    if (name == "location" && v.size() > 0 && v[0] == '/' && (v.size() == 1 || v[1] != '/')) {
      out.emplace_back(k, std::string(prefix) + v);
      continue;
    }
    out.emplace_back(k, v);
  }
  return out;
}

namespace {

std::string form_quoted(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"') {
      out += "%22";
    } else if (c == '\r') {
      out += "%0D";
    } else if (c == '\n') {
      out += "%0A";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string multipart_body(const std::vector<FormPart>& parts, const std::string& boundary) {
  std::string body;
  for (const auto& p : parts) {
    body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + form_quoted(p.name) +
            "\"";
    if (!p.filename.empty()) body += "; filename=\"" + form_quoted(p.filename) + "\"";
    body += "\r\n";
    if (!p.content_type.empty()) body += "Content-Type: " + p.content_type + "\r\n";
    body += "\r\n" + p.content + "\r\n";
  }
  body += "--" + boundary + "--\r\n";
  return body;
}

std::string multipart_boundary(const std::vector<FormPart>& parts, std::uint64_t seed) {
  static const char* hex = "0123456789abcdef";
  std::string boundary = "atl-";
  auto held = [&] {
    for (const auto& p : parts)
      if (p.content.find(boundary) != std::string::npos) return true;
    return false;
  };
  do {
    for (int i = 0; i < 16; ++i) {
      boundary += hex[seed & 0xf];
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    }
  } while (held() && boundary.size() < 64);  // RFC 2046: at most 70 characters
  return boundary;
}

bool asks_upgrade(const HeaderList& in) {
  for (const auto& [k, v] : in)
    if (lower(k) == "upgrade" && !trim(v).empty()) return true;
  return false;
}

}  // namespace atl
