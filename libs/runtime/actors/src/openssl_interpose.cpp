// OpenSSL calls that CAF 0.17's sessions make, interposed by atl's executables
// (and libatl.so): the executable's definitions win over libssl's at dynamic
// link time, and each calls OpenSSL's own through dlsym(RTLD_NEXT).
//
// 1. The error queue. Works around a bug of CAF 0.17's OpenSSL sessions: OpenSSL keeps errors in a
// per-thread queue and SSL_get_error() reports SSL_ERROR_SSL/SYSCALL whenever
// that queue is not empty. CAF drains the queue only inside CAF_LOG_* calls,
// which Debian's build compiles out, so one failed session (an atlctl that
// exits, a stranger failing the handshake) leaves an error behind, and the next
// harmless WANT_READ of *another* session on the multiplexer thread is taken
// for a failure: that connection (a worker's) is dropped. Interposing the four
// I/O calls CAF makes, each now starts with an empty queue, as OpenSSL's docs
// require.
//
// 2. The handshake's busy loop (connect_step, and HandshakeGate for the
// accepting side: a handshake waits without CPU, has a deadline, and only
// so many wait at once).
//
// 3. Credentials parsed once, and no session tickets (see below). CAF builds a fresh SSL_CTX per
// connection and loads the certificate, key and CA files into it; the three SSL_CTX_use_*/
// load_verify calls below take the objects atl parsed once for this process
// (os/tls_cache.hpp) when the path is the one atl loaded, and fall back to
// OpenSSL's loaders for anything else.
//
// 4. BASP read along before CAF's parser (BaspGuard, below).
//
// 5. New connections budgeted per source address (AcceptBudget, below): the
// head's accept() (apps/headnode/connection_lobby.cpp, which interposes it)
// refuses on a listening socket CAF polls, before any cryptography, an
// address past its budget (accept_within_budget).
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "atl/core/basp_framing.hpp"
#include "atl/core/pending_handshakes.hpp"
#include "atl/core/source_budget.hpp"
#include "atl/os/tls_cache.hpp"

namespace {

template <class F>
F next_definition(const char* name) {
  void* f = ::dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "atl: cannot find OpenSSL's %s: %s\n", name, ::dlerror());
    std::abort();
  }
  return reinterpret_cast<F>(f);
}

using EpollCtl = int (*)(int, int, int, epoll_event*);

// CAF's multiplexer keeps a handshaking socket registered for writing (the
// first BASP message waits in its buffer), so while a handshake waits for the
// peer it calls SSL_connect/accept in a busy loop: one idle TCP connection
// to the head took a whole core. The gate breaks that loop on the accepting
// side without touching CAF: while a handshake waits for the peer's bytes,
// the socket's registration in CAF's epoll set is narrowed to reading (CAF's
// own view of it is kept and restored as soon as the handshake moves on), so
// it waits in epoll at no cost. Each handshake has a deadline (a thread of
// the gate shuts the socket down when it passes, which CAF then sees as the
// handshake failing) and at most kMaxPending wait at once: past that the
// oldest waiting one is dropped (PendingHandshakes), so stalled strangers
// never keep a real client out. A connection's memory goes with its session
// (SSL_free below).
class HandshakeGate {
 public:
  static constexpr std::size_t kMaxPending = 256;
  static constexpr std::chrono::seconds kDeadline{5};

  static HandshakeGate& instance() {
    static auto* gate = new HandshakeGate;  // never destroyed: CAF's threads outlive statics
    return *gate;
  }

  // Every epoll_ctl of the process passes here; a socket whose handshake
  // waits for reading is registered without EPOLLOUT.
  int epoll_ctl(int epfd, int op, int fd, epoll_event* event) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (op == EPOLL_CTL_DEL) {
      registrations_.erase(fd);
      return real_epoll_ctl_(epfd, op, fd, event);
    }
    if (!event) return real_epoll_ctl_(epfd, op, fd, event);
    registrations_[fd] = Registration{epfd, *event};
    if (!reading_only_.count(fd)) return real_epoll_ctl_(epfd, op, fd, event);
    epoll_event narrowed = *event;
    narrowed.events &= ~static_cast<uint32_t>(EPOLLOUT);
    return real_epoll_ctl_(epfd, op, fd, &narrowed);
  }

  // After each SSL_accept step of `ssl` on `fd`: what it returned and the
  // error it reported.
  void after_accept_step(SSL* ssl, int fd, int ret, int error) {
    auto key = reinterpret_cast<atl::PendingHandshakes::Key>(ssl);
    std::lock_guard<std::mutex> lock(mutex_);
    if (ret == 1 || (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)) {
      forget(key);
      return;
    }
    if (fd < 0) return;
    auto admission = pending_.admit(key, atl::PendingHandshakes::Clock::now());
    if (admission.first_step) {
      // A descriptor of the gate's own: the deadline can shut the socket down
      // even if CAF closed its descriptor and the number was reused.
      sockets_[key] = Socket{fd, ::fcntl(fd, F_DUPFD_CLOEXEC, 0)};
      if (!deadline_thread_.joinable())
        deadline_thread_ = std::thread([this] { watch_deadlines(); });
      wake_.notify_one();
    }
    set_reading_only(fd, error == SSL_ERROR_WANT_READ);
    if (admission.evicted) {
      if (!eviction_logged_) {
        std::fprintf(stderr,
                     "atl: %zu TLS handshakes are waiting for their peers: the oldest are "
                     "dropped to make room\n",
                     pending_.cap());
        eviction_logged_ = true;
      }
      drop(*admission.evicted);
    }
  }

  void session_freed(SSL* ssl) {
    std::lock_guard<std::mutex> lock(mutex_);
    forget(reinterpret_cast<atl::PendingHandshakes::Key>(ssl));
  }

  // Handshakes waiting now (a test's and status's figure).
  std::size_t waiting() {
    std::lock_guard<std::mutex> lock(mutex_);
    return pending_.size();
  }

  // Whether `fd` is in an epoll set: CAF's multiplexer is the one user of
  // epoll in atl's processes (the dashboard's HTTPS and web terminals poll).
  bool registered(int fd) {
    std::lock_guard<std::mutex> lock(mutex_);
    return registrations_.count(fd) > 0;
  }

 private:
  struct Registration {
    int epfd;
    epoll_event event;  // as CAF asked for it
  };

  HandshakeGate()
      : real_epoll_ctl_(reinterpret_cast<EpollCtl>(::dlsym(RTLD_NEXT, "epoll_ctl"))),
        pending_(kMaxPending, std::chrono::duration_cast<std::chrono::milliseconds>(kDeadline)) {
    if (!real_epoll_ctl_) {
      std::fprintf(stderr, "atl: cannot find libc's epoll_ctl: %s\n", ::dlerror());
      std::abort();
    }
  }

  // Under mutex_. Narrows or restores the socket's epoll registration.
  void set_reading_only(int fd, bool on) {
    bool was = reading_only_.count(fd) > 0;
    if (on == was) return;
    if (on) {
      reading_only_.insert(fd);
    } else {
      reading_only_.erase(fd);
    }
    auto reg = registrations_.find(fd);
    if (reg == registrations_.end()) return;  // not in epoll yet: narrowed when CAF adds it
    epoll_event event = reg->second.event;
    if (on) event.events &= ~static_cast<uint32_t>(EPOLLOUT);
    real_epoll_ctl_(reg->second.epfd, EPOLL_CTL_MOD, fd, &event);
  }

  // Under mutex_. The handshake ended one way or another: CAF's own wish for
  // the socket applies again. (CAF frees a session before it closes the
  // socket, so `fd` still names it here.)
  void forget(atl::PendingHandshakes::Key key) {
    pending_.finish(key);
    auto socket = sockets_.find(key);
    if (socket == sockets_.end()) return;
    set_reading_only(socket->second.fd, false);
    if (socket->second.copy >= 0) ::close(socket->second.copy);
    sockets_.erase(socket);
    if (pending_.size() < kMaxPending / 2) eviction_logged_ = false;
    // A burst of connections is over: what their sessions took goes back to
    // the system (glibc keeps freed heap otherwise: 1,500 handshakes left the
    // head ~20 MB larger for good). On the gate's thread, not CAF's, and a
    // moment after the last session ends: CAF frees the rest of a connection
    // (its broker, its buffers) after its session, and a trim at once left
    // 16 MB of that behind until the next burst.
    if (++ended_since_trim_ >= kTrimAfter && pending_.size() == 0) {
      trim_at_ = std::chrono::steady_clock::now() + kTrimDelay;
      wake_.notify_one();
    }
  }

  // Under mutex_. Ends a waiting handshake: its socket reads as ended, CAF's
  // next SSL_accept on it fails and CAF drops the connection.
  void drop(atl::PendingHandshakes::Key key) {
    auto socket = sockets_.find(key);
    if (socket == sockets_.end()) return;
    if (socket->second.copy >= 0) ::shutdown(socket->second.copy, SHUT_RDWR);
    set_reading_only(socket->second.fd, false);  // CAF sees the end either way
  }

  // The gate's thread: drops the handshakes past their deadline.
  void watch_deadlines() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      auto next = pending_.next_deadline();
      if (trim_at_ && pending_.size() == 0 && std::chrono::steady_clock::now() >= *trim_at_) {
        trim_at_.reset();
        ended_since_trim_ = 0;
        lock.unlock();
        ::malloc_trim(0);
        lock.lock();
        continue;
      }
      // (While handshakes wait, the trim waits for them: forget() sets it again.)
      if (trim_at_ && pending_.size() == 0 && (!next || *trim_at_ < *next)) next = *trim_at_;
      if (next) {
        wake_.wait_until(lock, *next);
      } else {
        wake_.wait(lock);
      }
      for (auto key : pending_.take_expired(atl::PendingHandshakes::Clock::now())) drop(key);
    }
  }

  EpollCtl real_epoll_ctl_;
  std::mutex mutex_;
  std::condition_variable wake_;
  atl::PendingHandshakes pending_;
  struct Socket {
    int fd;    // CAF's descriptor
    int copy;  // the gate's own, for the deadline
  };
  std::unordered_map<atl::PendingHandshakes::Key, Socket> sockets_;
  std::unordered_map<int, Registration> registrations_;
  std::unordered_set<int> reading_only_;
  std::thread deadline_thread_;
  bool eviction_logged_ = false;
  static constexpr int kTrimAfter = 64;  // handshakes ended before a trim is worth it
  static constexpr std::chrono::milliseconds kTrimDelay{500};
  int ended_since_trim_ = 0;
  std::optional<std::chrono::steady_clock::time_point> trim_at_;  // when the burst's trim is due
};

// 4. BASP checked before CAF's parser sees it (atl/core/basp_framing.hpp):
// every byte SSL_read hands one of CAF's sessions is read along, and a
// connection whose bytes are not BASP (a member's hostile header: CAF 0.17
// crashed on one, and allocated what another's length said) is shut down
// at its first bad header, with one line (at most one a second) naming the
// peer. Sessions that are not CAF's (the dashboard's HTTPS) are left alone.
class BaspGuard {
 public:
  static BaspGuard& instance() {
    static auto* guard = new BaspGuard;  // never destroyed: CAF's threads outlive statics
    return *guard;
  }

  // The `n` bytes just read into `buf` on `ssl`: false when the connection
  // is not BASP (now or before) and is to be closed.
  bool after_read(SSL* ssl, const void* buf, int n) {
    std::optional<std::string> refused;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = framing_.find(ssl);
      if (it == framing_.end()) {
        std::optional<atl::BaspFraming> framing;
        if (HandshakeGate::instance().registered(SSL_get_fd(ssl)))
          framing.emplace(SSL_is_server(ssl) == 1);
        it = framing_.emplace(ssl, std::move(framing)).first;
      }
      if (!it->second) return true;  // not CAF's
      refused =
          it->second->take(static_cast<const unsigned char*>(buf), static_cast<std::size_t>(n));
    }
    if (!refused) return true;
    say(ssl, *refused);
    return false;
  }

  void session_freed(SSL* ssl) {
    std::lock_guard<std::mutex> lock(mutex_);
    framing_.erase(ssl);
    said_.erase(ssl);
  }

 private:
  void say(SSL* ssl, const std::string& why) {
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (said_.count(ssl)) return;  // once per connection
      said_.insert(ssl);
      if (now - last_said_ < std::chrono::seconds(1)) return;
      last_said_ = now;
    }
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    char host[64] = "?";
    int port = 0;
    if (::getpeername(SSL_get_fd(ssl), reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
      if (peer.ss_family == AF_INET) {
        auto* in = reinterpret_cast<sockaddr_in*>(&peer);
        ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
      } else if (peer.ss_family == AF_INET6) {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&peer);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
      }
    }
    std::fprintf(stderr,
                 "atl: closed a connection from %s:%d holding the job's certificate: "
                 "not BASP (%s)\n",
                 host, port, why.c_str());
  }

  std::mutex mutex_;
  std::unordered_map<SSL*, std::optional<atl::BaspFraming>> framing_;  // nullopt: not CAF's
  std::unordered_set<SSL*> said_;
  std::chrono::steady_clock::time_point last_said_{};
};

// 5. A TLS handshake costs the head ~1 ms of its one I/O thread: a flood of
// new connections from one address (2,000 a second) starved every other
// connection, atlctl's and a rejoining pod's alike. Each address gets a
// budget of new connections (SourceBudget: 250 a second, 500 at once, far
// above what a job's pods and atlctls open); past it the connection is
// closed as CAF accepts it, before CAF or OpenSSL does anything for it, so
// other addresses are served as before. Only listening sockets in CAF's
// epoll set (the head's published port) are budgeted. The refusals are said
// at most once every 10 s.
class AcceptBudget {
 public:
  static AcceptBudget& instance() {
    static auto* budget = new AcceptBudget;  // never destroyed: CAF's threads outlive statics
    return *budget;
  }

  bool admit(const sockaddr_storage& peer) {
    char host[INET6_ADDRSTRLEN] = "";
    if (peer.ss_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&peer)->sin_addr, host,
                  sizeof(host));
    } else if (peer.ss_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_addr, host,
                  sizeof(host));
    } else {
      return true;  // a local socket: not a network flood
    }
    const auto now = atl::SourceBudget::Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    const bool admitted = budget_.admit(host, now);
    // Said at a refusal: the first at once, then at most once per kReportEvery
    // (what was refused in between included).
    if (!admitted && (!said_ || now - last_said_ >= kReportEvery)) {
      said_ = true;
      last_said_ = now;
      say(budget_.take_refusals());
    }
    return admitted;
  }

 private:
  static constexpr std::chrono::seconds kReportEvery{10};

  void say(const std::vector<atl::SourceBudget::Refusals>& refused) const {
    std::string who;
    for (std::size_t i = 0; i < refused.size() && i < 3; ++i)
      who += (i ? ", " : "") + std::to_string(refused[i].count) + " from " + refused[i].source;
    if (refused.size() > 3) who += " and from " + std::to_string(refused.size() - 3) + " more";
    std::fprintf(stderr,
                 "atl: refused new connections past %.0f a second (%.0f at once) from one "
                 "address: %s; every other address is served (said at most every %lld s)\n",
                 budget_.options().per_second, budget_.options().burst, who.c_str(),
                 static_cast<long long>(kReportEvery.count()));
  }

  std::mutex mutex_;
  atl::SourceBudget budget_;
  bool said_ = false;
  atl::SourceBudget::Clock::time_point last_said_{};
};

// The connecting side (a workernode or atlctl, whose multiplexer has nothing
// else to do until its one connection is up) waits up to 20 ms for the
// peer's bytes instead of spinning: sixteen workers spinning while the head
// handshakes one after the other took the head's cores.
int connect_step(int (*real)(SSL*), SSL* ssl) {
  ERR_clear_error();
  int ret = real(ssl);
  if (ret <= 0 && SSL_get_error(ssl, ret) == SSL_ERROR_WANT_READ) {
    int fd = SSL_get_fd(ssl);
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, 20);
    }
  }
  return ret;
}

// CAF's contexts, marked when they load the job's CA (SSL_CTX_load_verify_
// locations, below): nothing else in atl's processes checks a peer against a
// CA file (the dashboard's cpp-httplib asks browsers for no certificate).
// Only their handshakes pass the gate: the dashboard's have cpp-httplib's
// own threads and timeouts, and must neither take the gate's slots nor
// have BASP's deadline.
int caf_context_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

bool from_caf(SSL* ssl) {
  SSL_CTX* ctx = SSL_get_SSL_CTX(ssl);
  return ctx && SSL_CTX_get_ex_data(ctx, caf_context_index()) != nullptr;
}

int accept_step(int (*real)(SSL*), SSL* ssl) {
  ERR_clear_error();
  if (!from_caf(ssl)) return real(ssl);
  int ret = real(ssl);
  int error = ret == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, ret);
  HandshakeGate::instance().after_accept_step(ssl, SSL_get_fd(ssl), ret, error);
  return ret;
}

}  // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static auto real = next_definition<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  int ret = real(ssl, buf, num);
  if (ret > 0 && !BaspGuard::instance().after_read(ssl, buf, ret)) {
    // Not one byte of it for CAF: the connection ends here (SSL_get_error
    // says SSL_ERROR_SYSCALL on an empty queue, which CAF takes for a failure).
    ::shutdown(SSL_get_fd(ssl), SHUT_RDWR);
    ERR_clear_error();
    errno = ECONNRESET;
    return -1;
  }
  return ret;
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static auto real = next_definition<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_connect(SSL* ssl) {
  static auto real = next_definition<int (*)(SSL*)>("SSL_connect");
  return connect_step(real, ssl);
}

int SSL_accept(SSL* ssl) {
  static auto real = next_definition<int (*)(SSL*)>("SSL_accept");
  return accept_step(real, ssl);
}

void SSL_free(SSL* ssl) {
  static auto real = next_definition<void (*)(SSL*)>("SSL_free");
  if (ssl && SSL_is_server(ssl)) HandshakeGate::instance().session_freed(ssl);
  if (ssl) BaspGuard::instance().session_freed(ssl);
  real(ssl);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) {
  return HandshakeGate::instance().epoll_ctl(epfd, op, fd, event);
}

int SSL_CTX_use_certificate_chain_file(SSL_CTX* ctx, const char* file) {
  static auto real =
      next_definition<int (*)(SSL_CTX*, const char*)>("SSL_CTX_use_certificate_chain_file");
  if (X509* cert = file ? atl::os::tls_cached_certificate(file) : nullptr)
    return SSL_CTX_use_certificate(ctx, cert);  // takes its own reference
  return real(ctx, file);
}

int SSL_CTX_use_PrivateKey_file(SSL_CTX* ctx, const char* file, int type) {
  static auto real =
      next_definition<int (*)(SSL_CTX*, const char*, int)>("SSL_CTX_use_PrivateKey_file");
  if (EVP_PKEY* key = type == SSL_FILETYPE_PEM && file ? atl::os::tls_cached_key(file) : nullptr)
    return SSL_CTX_use_PrivateKey(ctx, key);  // takes its own reference
  return real(ctx, file, type);
}

int SSL_CTX_load_verify_locations(SSL_CTX* ctx, const char* cafile, const char* capath) {
  static auto real =
      next_definition<int (*)(SSL_CTX*, const char*, const char*)>("SSL_CTX_load_verify_locations");
  // Called for each of CAF's per-connection contexts (nothing else in atl's
  // processes checks a peer against a CA file: the dashboard asks browsers for
  // no certificate). CAF never offers a session again, so the two session
  // tickets a TLS 1.3 server sends by default are waste: ~0.45 ms of the
  // head's CPU per connection, on its one I/O thread (bench/results/tls.md).
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_ex_data(ctx, caf_context_index(), ctx);  // CAF's: its handshakes pass the gate
  if (X509_STORE* store = cafile && !capath ? atl::os::tls_cached_store(cafile) : nullptr) {
    SSL_CTX_set1_cert_store(ctx, store);  // shared, read-only: peers are checked against it
    return 1;
  }
  return real(ctx, cafile, capath);
}

}  // extern "C"

namespace atl {

int accept_within_budget(int fd, sockaddr* addr, socklen_t* len,
                         int (*real)(int, sockaddr*, socklen_t*)) {
  if (!HandshakeGate::instance().registered(fd)) return real(fd, addr, len);
  // CAF's listening socket (non-blocking): a refused connection is closed and
  // the next one taken, until one is admitted or none waits (EAGAIN).
  while (true) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    int conn = real(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len);
    if (conn < 0) return conn;
    if (AcceptBudget::instance().admit(peer)) {
      if (addr && len) {
        std::memcpy(addr, &peer, std::min<socklen_t>(*len, peer_len));
        *len = peer_len;
      }
      return conn;
    }
    ::close(conn);
  }
}

std::size_t tls_handshakes_waiting() { return HandshakeGate::instance().waiting(); }

// Referenced from actor_system_setup.cpp so that the linker keeps this object
// (nothing else in atl calls these functions; only libcaf_openssl does).
bool openssl_error_queue_fix_linked() { return true; }

}  // namespace atl
