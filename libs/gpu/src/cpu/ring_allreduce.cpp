#include "atl/gpu/ring_allreduce.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace atl::gpu {

namespace {

using Clock = std::chrono::steady_clock;

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

Expected<sockaddr_in> resolve(const HostPort& hp) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(hp.host.c_str(), nullptr, &hints, &res) != 0 || !res) {
    return make_error("cannot resolve " + hp.host);
  }
  sockaddr_in addr = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  addr.sin_port = htons(hp.port);
  freeaddrinfo(res);
  return addr;
}

bool wait_fd(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  int rc;
  do {
    rc = poll(&p, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}

}  // namespace

Expected<RingListener> listen_for_ring(int port) {
  RingListener l;
  l.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l.fd < 0) return make_error(sys_error("socket"));
  int one = 1;
  setsockopt(l.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  any.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof any;
  if (bind(l.fd, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 || listen(l.fd, 4) != 0 ||
      getsockname(l.fd, reinterpret_cast<sockaddr*>(&any), &len) != 0) {
    std::string why = sys_error("cannot listen on port " + std::to_string(port));
    close(l.fd);
    return make_error(why);
  }
  l.port = ntohs(any.sin_port);
  return l;
}

Expected<std::unique_ptr<TcpRing>> TcpRing::connect(const RingConfig& config) {
  if (config.peers.size() < 2) return make_error("a ring needs at least two members");
  if (config.index < 0 || config.index >= static_cast<int>(config.peers.size()))
    return make_error("ring index out of range");
  std::unique_ptr<TcpRing> ring(new TcpRing(config));
  const int n = ring->size();
  const HostPort& me = config.peers[config.index];
  const HostPort& next = config.peers[(config.index + 1) % n];
  const HostPort& prev = config.peers[(config.index + n - 1) % n];

  if (config.listen_fd >= 0) {
    ring->listen_fd_ = config.listen_fd;
  } else {
    auto listener = listen_for_ring(me.port);
    if (!listener) return Error{listener.error()};
    ring->listen_fd_ = listener->fd;
  }
  const int one = 1;

  // Connect to the next member (it may not listen yet) while accepting the previous one.
  auto deadline = Clock::now() + config.timeout;
  auto next_addr = resolve(next);
  if (!next_addr) return Error{next_addr.error()};
  std::string last = "no attempt";
  while (ring->next_fd_ < 0) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&*next_addr), sizeof *next_addr) == 0) {
      ring->next_fd_ = fd;
      break;
    }
    last = std::strerror(errno);
    close(fd);
    if (Clock::now() > deadline)
      return make_error("cannot reach ring member " + next.to_string() + ": " + last);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (!wait_fd(ring->listen_fd_, POLLIN, std::max(left, std::chrono::milliseconds(1))))
    return make_error("ring member " + prev.to_string() + " never connected");
  ring->prev_fd_ = accept4(ring->listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (ring->prev_fd_ < 0) return make_error(sys_error("accept"));
  for (int fd : {ring->next_fd_, ring->prev_fd_})
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return ring;
}

TcpRing::~TcpRing() {
  for (int fd : {listen_fd_, next_fd_, prev_fd_})
    if (fd >= 0) close(fd);
}

Status TcpRing::send_all(const void* data, size_t len) {
  auto* p = static_cast<const char*>(data);
  while (len > 0) {
    if (!wait_fd(next_fd_, POLLOUT, config_.timeout))
      return make_error("ring member " + config_.peers[(index() + 1) % size()].to_string() +
                        " stopped reading");
    ssize_t n = ::send(next_fd_, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return make_error(sys_error(
          "ring member " + config_.peers[(index() + 1) % size()].to_string() + " was lost (send)"));
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return Ok{};
}

Status TcpRing::recv_all(void* data, size_t len) {
  auto* p = static_cast<char*>(data);
  while (len > 0) {
    if (!wait_fd(prev_fd_, POLLIN, config_.timeout))
      return make_error("ring member " +
                        config_.peers[(index() + size() - 1) % size()].to_string() +
                        " went silent");
    ssize_t n = ::recv(prev_fd_, p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0)
      return make_error("ring member " +
                        config_.peers[(index() + size() - 1) % size()].to_string() + " was lost");
    if (n < 0) {
      return make_error(sys_error("ring member " +
                                  config_.peers[(index() + size() - 1) % size()].to_string() +
                                  " was lost (receive)"));
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return Ok{};
}

Expected<bool> TcpRing::agree(bool decision) {
  unsigned char word = decision ? 1 : 0;
  if (index() == 0) {
    if (auto st = send_all(&word, 1); !st) return Error{st.error()};
    if (auto st = recv_all(&word, 1); !st) return Error{st.error()};
    return decision;
  }
  if (auto st = recv_all(&word, 1); !st) return Error{st.error()};
  if (auto st = send_all(&word, 1); !st) return Error{st.error()};
  return word == 1;
}

Expected<AllreduceRound> TcpRing::allreduce(std::int64_t bytes, int round) {
  const int n = size(), me = index();
  const std::int64_t count = bytes / static_cast<std::int64_t>(sizeof(float));
  std::vector<float> data(static_cast<size_t>(count)), incoming;
  for (std::int64_t i = 0; i < count; ++i) data[static_cast<size_t>(i)] = ring_input(me, i, round);
  auto chunk_begin = [&](int c) { return count * c / n; };

  // Sending and receiving at once: a full ring of blocking sends would deadlock.
  auto exchange = [&](int send_chunk, int recv_chunk) -> Status {
    std::int64_t sb = chunk_begin(send_chunk), se = chunk_begin(send_chunk + 1);
    std::int64_t rb = chunk_begin(recv_chunk), re = chunk_begin(recv_chunk + 1);
    incoming.resize(static_cast<size_t>(re - rb));
    Status sent = Ok{};
    std::thread sender(
        [&] { sent = send_all(&data[static_cast<size_t>(sb)], (se - sb) * sizeof(float)); });
    Status got = recv_all(incoming.data(), incoming.size() * sizeof(float));
    sender.join();
    if (!sent) return sent;
    return got;
  };

  auto t0 = Clock::now();
  for (int step = 0; step < n - 1; ++step) {  // reduce-scatter
    int send_chunk = (me - step + n) % n, recv_chunk = (me - step - 1 + n) % n;
    if (auto st = exchange(send_chunk, recv_chunk); !st) return Error{st.error()};
    std::int64_t rb = chunk_begin(recv_chunk);
    for (size_t i = 0; i < incoming.size(); ++i) data[static_cast<size_t>(rb) + i] += incoming[i];
  }
  for (int step = 0; step < n - 1; ++step) {  // all-gather
    int send_chunk = (me + 1 - step + n) % n, recv_chunk = (me - step + n) % n;
    if (auto st = exchange(send_chunk, recv_chunk); !st) return Error{st.error()};
    std::int64_t rb = chunk_begin(recv_chunk);
    std::memcpy(&data[static_cast<size_t>(rb)], incoming.data(), incoming.size() * sizeof(float));
  }
  AllreduceRound result;
  result.bytes = count * static_cast<std::int64_t>(sizeof(float));
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (std::int64_t i = 0; i < count; ++i)
    result.wrong += data[static_cast<size_t>(i)] != ring_sum(n, i, round);
  return result;
}

}  // namespace atl::gpu
