#include "terminal_socket.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "atl/core/websocket.hpp"

namespace atl::headnode {

namespace {

constexpr std::size_t kMaxMessage = 64 * 1024;  // a paste of 64 KiB at most per message

// The peer's address and port of a socket, as httplib writes them.
bool peer_is(int fd, const std::string& addr, int port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
  char host[INET6_ADDRSTRLEN] = {0};
  int p = -1;
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    p = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    p = ntohs(in->sin6_port);
  } else {
    return false;
  }
  return p == port && addr == host;
}

bool local_port_is(int fd, int port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port) == port;
  if (ss.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port) == port;
  return false;
}

class Wire {
 public:
  explicit Wire(RawConnection c) : c_(c) {}
  bool pending() const { return c_.ssl && ::SSL_pending(c_.ssl) > 0; }
  // >0 bytes; 0 the peer closed; <0 an error (or a read timeout).
  int read(char* buf, int max) {
    if (c_.ssl) return ::SSL_read(c_.ssl, buf, max);
    return static_cast<int>(::recv(c_.fd, buf, static_cast<std::size_t>(max), 0));
  }
  bool write(std::string_view bytes) {
    while (!bytes.empty()) {
      int n = c_.ssl ? ::SSL_write(c_.ssl, bytes.data(), static_cast<int>(bytes.size()))
                     : static_cast<int>(::send(c_.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL));
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  void close() {
    if (c_.ssl) ::SSL_shutdown(c_.ssl);
    ::shutdown(c_.fd, SHUT_RDWR);
  }

 private:
  RawConnection c_;
};

// "r24,80": the browser's window size.
std::optional<std::pair<int, int>> parse_size(std::string_view s) {
  auto comma = s.find(',');
  if (comma == std::string_view::npos || comma == 0 || comma > 4 || s.size() - comma - 1 > 4 ||
      s.size() - comma - 1 == 0)
    return std::nullopt;
  int v[2] = {0, 0};
  std::string_view parts[2] = {s.substr(0, comma), s.substr(comma + 1)};
  for (int i = 0; i < 2; ++i)
    for (char c : parts[i]) {
      if (c < '0' || c > '9') return std::nullopt;
      v[i] = v[i] * 10 + (c - '0');
    }
  if (v[0] < 1 || v[1] < 1 || v[0] > 1000 || v[1] > 1000) return std::nullopt;
  return std::make_pair(v[0], v[1]);
}

}  // namespace

std::optional<RawConnection> raw_connection_of(const httplib::Request& req) {
  if (req.ssl) {
    auto* ssl = const_cast<SSL*>(req.ssl);
    return RawConnection{ssl, ::SSL_get_fd(ssl)};
  }
  // Plain HTTP: the socket whose peer is the request's (one TCP connection
  // has that pair of ends), among this process's descriptors.
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  std::optional<RawConnection> found;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (*end || fd < 0 || fd == ::dirfd(dir)) continue;
    if (local_port_is(static_cast<int>(fd), req.local_port) &&
        peer_is(static_cast<int>(fd), req.remote_addr, req.remote_port)) {
      found = RawConnection{nullptr, static_cast<int>(fd)};
      break;
    }
  }
  ::closedir(dir);
  return found;
}

void serve_terminal(RawConnection conn, const std::string& key, TerminalLink& link, int stop_fd,
                    const std::function<std::optional<std::string>()>& still_ok) {
  Wire wire(conn);
  // A browser that stops reading cannot hold this thread for long.
  timeval tv{10, 0};
  ::setsockopt(conn.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ::setsockopt(conn.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (!wire.write(ws::upgrade_response(key))) {
    link.close("the viewer left before the terminal opened");
    return;
  }
  auto end = [&](std::uint16_t code, const std::string& why, const std::string& event) {
    (void)wire.write(ws::frame(ws::Opcode::close, ws::close_payload(code, why)));
    link.close(event);
    wire.close();
  };
  ws::FrameReader reader(kMaxMessage);
  char buf[16 * 1024];
  for (;;) {
    // Input's credit: with a window of keystrokes on their way to the pod,
    // the viewer's bytes wait in TCP (a paste slows, the pod never grows).
    const bool take_input = !link.input_full();
    pollfd fds[3] = {{conn.fd, static_cast<short>(take_input ? POLLIN : 0), 0},
                     {link.wake_fd(), POLLIN, 0},
                     {stop_fd, POLLIN, 0}};
    bool readable = take_input && wire.pending();
    if (!readable) {
      int n = ::poll(fds, stop_fd >= 0 ? 3 : 2, 1000);
      if (n < 0 && errno != EINTR) return end(ws::kCloseGoingAway, "poll failed", "poll failed");
      readable = n > 0 && fds[0].revents != 0;
    }
    if (auto why = still_ok()) return end(ws::kCloseGoingAway, *why, *why);

    // The pod's side first: output to pass on, or the end.
    if (fds[1].revents) {
      auto taken = link.take();
      if (!taken.output.empty()) {
        if (!wire.write(ws::frame(ws::Opcode::binary, taken.output))) {
          link.close("the viewer stopped reading");
          return wire.close();
        }
        link.ack(static_cast<std::int64_t>(taken.output.size()));
      }
      if (taken.ended) {
        // 1000 when the shell ended by itself; 1001 when its pod or the head went.
        const auto code = taken.shell_ended ? ws::kCloseNormal : ws::kCloseGoingAway;
        (void)wire.write(ws::frame(ws::Opcode::close, ws::close_payload(code, *taken.ended)));
        return wire.close();
      }
    }
    if (!readable) continue;
    int n = wire.read(buf, sizeof buf);
    if (n <= 0) {
      link.close("the viewer's connection dropped");
      return wire.close();
    }
    reader.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    for (;;) {
      auto next = reader.next();
      if (!next) {
        return end(reader.too_big() ? ws::kCloseTooBig : ws::kCloseProtocolError, next.error(),
                   "the viewer broke the WebSocket protocol: " + next.error());
      }
      if (!next->has_value()) break;
      ws::Message& m = **next;
      switch (m.op) {
        case ws::Opcode::ping:
          if (!wire.write(ws::frame(ws::Opcode::pong, m.data))) {
            link.close("the viewer's connection dropped");
            return wire.close();
          }
          break;
        case ws::Opcode::close: {
          auto c = ws::parse_close(m.data);
          (void)wire.write(
              ws::frame(ws::Opcode::close,
                        ws::close_payload(c.code == 1005 ? ws::kCloseNormal : c.code, "")));
          link.close("the viewer closed it");
          return wire.close();
        }
        case ws::Opcode::text:
        case ws::Opcode::binary:
          if (!m.data.empty() && m.data[0] == 'i') {
            link.input(m.data.substr(1));
          } else if (!m.data.empty() && m.data[0] == 'r') {
            if (auto size = parse_size(std::string_view(m.data).substr(1)))
              link.resize(size->first, size->second);
          }
          break;
        default:
          break;  // pongs
      }
    }
  }
}

}  // namespace atl::headnode
