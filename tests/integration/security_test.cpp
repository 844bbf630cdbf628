// The control plane against strangers: only holders of the job's certificate
// get a byte of BASP out of (or into) a node, and hostile bytes from anyone
// else leave every node up and the job running.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "atl/core/door_frame.hpp"
#include "atl/core/host_port.hpp"
#include "atl/os/local_door.hpp"
#include "atl/os/tls_credentials.hpp"
#include "test_cluster.hpp"

namespace atl::test {
namespace {

std::uint16_t port_of(const std::string& address) {
  return static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

int tcp_connect(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

void send_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the peer hung up: that is an answer too
    sent += static_cast<size_t>(n);
  }
}

// What a TLS client got out of a node: application bytes are BASP's greeting,
// which a node sends first to every peer it accepted.
struct TlsProbe {
  bool handshake = false;
  size_t app_bytes = 0;
  bool ticket = false;  // the node sent a session ticket (before its first bytes)
};

// Connects with `cert`/`key` (none when empty), never verifying the node, so
// that only the node's own verification can stop us.
TlsProbe tls_probe(std::uint16_t port, const std::string& cert, const std::string& key) {
  TlsProbe out;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  if (!cert.empty()) {
    EXPECT_EQ(SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM), 1);
  }
  int fd = tcp_connect(port);
  if (fd >= 0) {
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    out.handshake = SSL_connect(ssl) == 1;
    char buf[4096];
    int n = 0;
    // TLS 1.3: the node checks our certificate after our SSL_connect returned,
    // so the verdict (greeting or alert) comes with the first read.
    while (out.handshake && (n = SSL_read(ssl, buf, sizeof(buf))) > 0) {
      out.app_bytes += static_cast<size_t>(n);
      if (out.app_bytes > 0) break;
    }
    out.ticket = SSL_SESSION_has_ticket(SSL_get0_session(ssl)) == 1;
    SSL_free(ssl);
    ::close(fd);
  }
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return out;
}

// A member's connection (the job's certificate) that sends `bytes` after the
// node's greeting, then waits up to 3 s for the node to close it. True
// when the node closed it.
bool tls_send_as_member(std::uint16_t port, const std::string& tls_dir, const std::string& bytes) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  SSL_CTX_use_certificate_chain_file(ctx, (tls_dir + "/cert.pem").c_str());
  SSL_CTX_use_PrivateKey_file(ctx, (tls_dir + "/key.pem").c_str(), SSL_FILETYPE_PEM);
  bool closed = false;
  int fd = tcp_connect(port);
  if (fd >= 0) {
    timeval tv{3, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
      char buf[4096];
      SSL_read(ssl, buf, sizeof(buf));  // the greeting
      SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size()));
      int n = 0;
      while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0) {
      }
      // Closed: an end of any kind (a reset, an EOF without close_notify);
      // open: the read timed out (SO_RCVTIMEO reads as WANT_READ).
      const int error = SSL_get_error(ssl, n);
      closed = error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE;
    }
    SSL_free(ssl);
    ::close(fd);
  }
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return closed;
}

long rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// The bytes that crashed CAF 0.17's BASP parser (SIGSEGV in
// basp::instance::handle): 8 zero bytes, 8 bytes 0xff, 64 zero bytes.
std::string crash_packet() {
  return std::string(8, '\0') + std::string(8, '\xff') + std::string(64, '\0');
}

// A BASP-sized header whose payload length says 0xffffffff (CAF allocated 4 GiB).
std::string huge_length_header() {
  std::string h(32, '\0');
  h[0] = 1;  // operation
  for (int i = 4; i < 8; ++i) h[static_cast<size_t>(i)] = '\xff';
  return h;
}

// Throws hostile bytes at a port: the crash packet, the length bomb and
// `random_headers` random 32-byte headers, each on a connection of its own.
void attack(std::uint16_t port, int random_headers) {
  std::mt19937 rng(12345);
  std::vector<std::string> payloads = {crash_packet(), huge_length_header()};
  for (int i = 0; i < random_headers; ++i) {
    std::string h(32, '\0');
    for (auto& c : h) c = static_cast<char>(rng());
    payloads.push_back(h);
  }
  for (const auto& p : payloads) {
    int fd = tcp_connect(port);
    if (fd < 0) continue;
    send_all(fd, p);
    ::close(fd);
  }
}

// A fake head or supervisor: accepts connections on a free port and answers
// each with `payloads` in turn, until stopped.
class HostileServer {
 public:
  HostileServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 64);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    timeval tv{0, 200000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    thread_ = std::thread([this] {
      std::mt19937 rng(777);
      while (!stop_) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        ++accepted_;
        std::string bytes = accepted_ % 2 ? crash_packet() : huge_length_header();
        for (int i = 0; i < 8; ++i) {
          std::string h(32, '\0');
          for (auto& ch : h) ch = static_cast<char>(rng());
          bytes += h;
        }
        send_all(c, bytes);
        ::close(c);
      }
    });
  }
  ~HostileServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// Credentials of another job: a CA the head has never seen.
std::string other_credentials(TestCluster& c) {
  std::string dir = c.dir() + "/other-tls";
  auto made = os::generate_tls_credentials(dir, "jo-someoneelse");
  EXPECT_TRUE(made.ok()) << (made ? "" : made.error());
  return dir;
}

TEST(Security, TheHeadTalksOnlyToHoldersOfTheJobsCertificate) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--", "sleep 600"});
  std::uint16_t port = port_of(c.head_address());
  auto& worker = c.start_worker(0);
  ASSERT_TRUE(c.wait_for_status("command"));
  const std::string mine = c.state_dir() + "/tls";
  const std::string other = other_credentials(c);

  // The positive control: the job's own certificate gets BASP's greeting.
  auto good = tls_probe(port, mine + "/cert.pem", mine + "/key.pem");
  EXPECT_TRUE(good.handshake);
  EXPECT_GT(good.app_bytes, 0u);
  // CAF never resumes a session: the head spends nothing on tickets.
  EXPECT_FALSE(good.ticket);
  // No certificate, or one from another CA: not one byte of BASP.
  EXPECT_EQ(tls_probe(port, "", "").app_bytes, 0u);
  EXPECT_EQ(tls_probe(port, other + "/cert.pem", other + "/key.pem").app_bytes, 0u);

  // atlctl as a stranger: every command is refused at the handshake.
  for (const auto& cmd :
       std::vector<std::vector<std::string>>{{"status"}, {"stop"}, {"run", "-f", "id"}, {"logs"}}) {
    for (const auto& creds :
         std::vector<std::vector<std::string>>{{"--tls-dir", other}, {"--insecure"}}) {
      std::vector<std::string> args = {"--address", c.head_address()};
      args.insert(args.end(), creds.begin(), creds.end());
      args.insert(args.end(), cmd.begin(), cmd.end());
      auto r = c.atlctl(args);
      EXPECT_EQ(r.exit_code, 4) << r.output;
      EXPECT_NE(r.output.find("cannot reach the supervisor"), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("Job status"), std::string::npos) << r.output;
    }
  }
  // A workernode with another job's credentials cannot register a pod.
  auto& intruder = c.start("intruder",
                           {bin("workernode"), "--head", c.head_address(), "--name",
                            c.worker_name(0), "--connect-timeout", "1s"},
                           {"ATL_TLS_DIR=" + other});
  EXPECT_EQ(c.wait_exit(intruder), 3) << c.output(intruder);
  EXPECT_NE(c.output(intruder).find("refused this process's TLS certificate"), std::string::npos)
      << c.output(intruder);

  // The job never noticed: still running, and the real atlctl still works.
  EXPECT_TRUE(c.wait_for_status("command", 10s));
  auto stop = c.atlctl({"--address", c.head_address(), "stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.output;
  EXPECT_TRUE(c.wait_for_status("debugStop"));
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1);
  EXPECT_EQ(c.wait_exit(worker), 1);
}

TEST(Security, HostileBytesLeaveTheHeadUpAndCostNoMemory) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--", "sleep 600"});
  std::uint16_t port = port_of(c.head_address());
  c.start_worker(0);
  ASSERT_TRUE(c.wait_for_status("command"));
  long before = rss_kib(head.process->pid());
  attack(port, 1000);
  long after = rss_kib(head.process->pid());
  // Still alive, still the same job, and no 4 GiB buffer (or anything near).
  EXPECT_FALSE(head.process->try_wait().has_value()) << c.output(head);
  EXPECT_TRUE(c.wait_for_status("command", 10s));
  EXPECT_LT(after - before, 64 * 1024) << before << " KiB -> " << after << " KiB";
  auto r = c.atlctl({"--address", c.head_address(), "run", "-f", "echo still-here"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("still-here"), std::string::npos) << r.output;
}

// A holder of the job's credentials (every rank has them) sends what is not
// BASP: the 80 bytes that crashed CAF 0.17's parser (SIGSEGV: no final
// status, the job file left behind), a payload length of 0xffffffff (the
// head stalled until both pods were declared lost), random headers. The head
// closes each such connection and answers on; no pod is lost.
TEST(Security, AMembersBadBaspNeitherCrashesNorStallsTheHead) {
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "2", "--local-workers", "2", "--heartbeat-timeout", "6s", "--", "sleep 600"});
  ASSERT_TRUE(c.wait_for_status("command"));
  const std::uint16_t port = port_of(c.head_address());
  const std::string mine = c.state_dir() + "/tls";
  std::mt19937 rng(4242);
  std::vector<std::string> payloads = {crash_packet(), huge_length_header()};
  for (int i = 0; i < 50; ++i) {
    std::string h(32, '\0');
    for (auto& ch : h) ch = static_cast<char>(rng());
    payloads.push_back(h);
  }
  for (const auto& bytes : payloads) {
    EXPECT_TRUE(tls_send_as_member(port, mine, bytes)) << "the head kept a bad connection open";
    ASSERT_FALSE(head.process->try_wait().has_value()) << c.output(head);
  }
  // Longer than the heartbeat timeout: a stalled head would lose its pods.
  std::this_thread::sleep_for(8s);
  auto status = c.atlctl({"--address", c.head_address(), "status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  auto info = nlohmann::json::parse(status.output, nullptr, false);
  EXPECT_EQ(info["state"], "command") << status.output;
  EXPECT_EQ(info["restarts"], 0) << status.output;
  EXPECT_NE(c.output(head).find("not BASP"), std::string::npos) << c.output(head);
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
}

TEST(Security, AWorkerFacingAHostileHeadEndsWithALineNotACrash) {
  TestCluster c;
  c.make_credentials();
  HostileServer fake;
  auto& worker =
      c.start("worker", {bin("workernode"), "--head", "127.0.0.1:" + std::to_string(fake.port()),
                         "--name", "w", "--connect-timeout", "2s"});
  EXPECT_EQ(c.wait_exit(worker), 3) << c.output(worker);
  EXPECT_EQ(count_lines(c.output(worker)), 1) << c.output(worker);
  EXPECT_GT(fake.accepted(), 1);  // it kept trying, through every answer
}

TEST(Security, AtlctlFacingAHostileServerEndsWithALineNotACrash) {
  TestCluster c;
  c.make_credentials();
  HostileServer fake;
  for (int i = 0; i < 4; ++i) {
    auto r = c.atlctl({"--address", "127.0.0.1:" + std::to_string(fake.port()), "status"});
    EXPECT_EQ(r.exit_code, 4) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
  }
}

// Ranks inherit the node's choice (ATL_TLS_DIR, or ATL_INSECURE=1), so
// `atlctl` inside them needs no flags either way.
TEST(Security, RanksReachTheSupervisorWithoutFlagsWithTlsAndWithout) {
  for (bool insecure : {false, true}) {
    TestCluster c;
    std::vector<std::string> args = {"--workers", "1", "--local-workers", "1"};
    if (insecure) args.push_back("--insecure");
    args.insert(args.end(), {"--", "atlctl status"});
    auto& head = c.start_head(args);
    EXPECT_EQ(c.wait_exit(head), 0) << c.output(head);
    EXPECT_NE(c.output(head).find("[rank 0] Job status:  command"), std::string::npos)
        << c.output(head);
    EXPECT_EQ(c.output(head).find("warning: --insecure") != std::string::npos, insecure)
        << c.output(head);
  }
}

TEST(Security, ACertificateFileWithAChainStillJoinsAndIsStillChecked) {
  // A mounted Secret's cert.pem may carry intermediates after the leaf: atl
  // then leaves the file to OpenSSL's own loader (os/tls_cache.hpp keeps only
  // single certificates), and the job must run as with a single one.
  TestCluster c;
  const std::string dir = c.dir() + "/chain-tls";
  auto made = os::generate_tls_credentials(dir, c.job_id());
  ASSERT_TRUE(made.ok()) << (made ? "" : made.error());
  std::string leaf, ca;
  {
    std::ifstream a(made->cert), b(made->ca);
    std::stringstream sa, sb;
    sa << a.rdbuf();
    sb << b.rdbuf();
    leaf = sa.str();
    ca = sb.str();
  }
  std::ofstream(made->cert, std::ios::trunc) << leaf << ca;
  auto& head =
      c.start_head({"--tls-dir", dir, "--workers", "1", "--local-workers", "1", "--", "sleep 600"});
  // The local worker joins (the job reaches command) and atlctl, both with
  // the chain file, are served; another CA's holder is still refused.
  bool running = false;
  for (int i = 0; i < 200 && !running; ++i) {
    auto r = c.atlctl({"--address", c.head_address(), "--tls-dir", dir, "status"});
    running = r.output == "Job status:  command\n";
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(running) << c.output(head);
  auto stranger =
      c.atlctl({"--address", c.head_address(), "--tls-dir", other_credentials(c), "status"});
  EXPECT_EQ(stranger.exit_code, 4) << stranger.output;
  head.process->signal(SIGTERM);
  EXPECT_EQ(c.wait_exit(head), 1) << c.output(head);
}

}  // namespace
}  // namespace atl::test

namespace atl::test {
namespace {

// CPU seconds (user + system) the process has used so far.
double cpu_seconds(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string f;
  long utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::stol(f);
    if (i == 15) {
      stime = std::stol(f);
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace

// One idle TCP connection used to keep the head at 100% of a core (CAF polled
// the handshake in a loop); now waiting costs nothing, a handshake has a
// deadline, stalled ones never keep atlctl out, and their memory goes back.
TEST(Security, IdleConnectionsAndStalledHandshakesCostTheHeadNothing) {
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 4096) GTEST_SKIP() << "needs 4096 descriptors, has " << files.rlim_cur;
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--", "sleep 600"});
  std::uint16_t port = port_of(c.head_address());
  c.start_worker(0);
  ASSERT_TRUE(c.wait_for_status("command"));
  const int pid = head.process->pid();
  const long baseline = rss_kib(pid);
  std::vector<int> held;
  for (int i = 0; i < 1000; ++i) {
    int fd = tcp_connect(port);
    ASSERT_GE(fd, 0) << "connection " << i;
    held.push_back(fd);
  }
  // A ClientHello's first bytes, then nothing: a handshake that never finishes.
  const std::string partial("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  for (int i = 0; i < 500; ++i) {
    int fd = tcp_connect(port);
    ASSERT_GE(fd, 0) << "half handshake " << i;
    send_all(fd, partial);
    held.push_back(fd);
  }
  const double cpu_before = cpu_seconds(pid);
  const auto t0 = std::chrono::steady_clock::now();
  auto status = c.atlctl({"--address", c.head_address(), "status"});
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_EQ(status.output, "Job status:  command\n");
  std::this_thread::sleep_for(3s);  // a window to measure CPU over, not a wait for an event
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double busy = (cpu_seconds(pid) - cpu_before) / wall;
  // Spinning, it was ~1.0 (a whole core); waiting it is ~0.01. Generous for 2 shared cores.
  EXPECT_LT(busy, 0.25) << "the head used " << busy * 100 << "% of a core";
  for (int fd : held) ::close(fd);
  // Memory back to where it was (the sessions freed and handed back), within 5 MB.
  long after = 0;
  for (int i = 0; i < 100; ++i) {
    after = rss_kib(pid);
    if (after - baseline < 5 * 1024) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_LT(after - baseline, 5 * 1024) << baseline << " KiB -> " << after << " KiB";
  EXPECT_FALSE(head.process->try_wait().has_value()) << c.output(head);
  EXPECT_TRUE(c.wait_for_status("command", 10s));
}

}  // namespace atl::test

namespace atl::test {

// What atl writes is the job user's alone (a rank's printed secret sat in a
// 0644 log); what the ranks write keeps the umask they were started with.
TEST(Security, AtlsOwnFilesArePrivateAndRankFilesKeepTheUsersUmask) {
  mode_t user_umask = ::umask(022);
  ::umask(user_umask);
  TestCluster c;
  auto& head = c.start_head(
      {"--workers", "1", "--local-workers", "1", "--",
       "echo secret-token-123; touch " + c.dir() + "/rank-file; mkdir " + c.dir() + "/rank-dir"});
  ASSERT_EQ(c.wait_exit(head), 0) << c.output(head);
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(c.state_dir())) {
    struct stat st {};
    ASSERT_EQ(::lstat(entry.path().c_str(), &st), 0) << entry.path();
    if (S_ISLNK(st.st_mode)) continue;
    EXPECT_EQ(st.st_mode & 077, 0u) << entry.path() << " is " << std::oct << (st.st_mode & 0777);
    files += S_ISREG(st.st_mode);
  }
  EXPECT_GE(files, 4) << "state.db, address, head.log, a rank log at least";
  struct stat top {};
  ASSERT_EQ(::stat(c.state_dir().c_str(), &top), 0);
  EXPECT_EQ(top.st_mode & 0777, 0700u) << std::oct << (top.st_mode & 0777);
  struct stat rank_file {
  }, rank_dir{};
  ASSERT_EQ(::stat((c.dir() + "/rank-file").c_str(), &rank_file), 0);
  ASSERT_EQ(::stat((c.dir() + "/rank-dir").c_str(), &rank_dir), 0);
  EXPECT_EQ(rank_file.st_mode & 0777, 0666u & ~user_umask) << std::oct << rank_file.st_mode;
  EXPECT_EQ(rank_dir.st_mode & 0777, 0777u & ~user_umask) << std::oct << rank_dir.st_mode;
}

}  // namespace atl::test

namespace atl::test {

// Each atlctl is a new CAF node; CAF 0.17 kept ~1.1 kB per node it ever met
// (basp_interpose.cpp): 10,000 `atlctl status` grew the head by ~11 MB.
TEST(Security, ManyAtlctlCallsLeaveTheHeadsMemoryAsItWas) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--local-workers", "1", "--", "sleep 600"});
  ASSERT_TRUE(c.wait_for_status("command"));
  const int pid = head.process->pid();
  // Warm: the first calls allocate what every later call reuses.
  for (int i = 0; i < 50; ++i)
    ASSERT_EQ(c.atlctl({"--address", c.head_address(), "status"}).exit_code, 0);
  const long before = rss_kib(pid);
  constexpr int kCalls = 3000;
  std::atomic<int> failed{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < kCalls / 4; ++i) {
        std::string cmd = "ATL_TLS_DIR=" + c.state_dir() + "/tls " + bin("atlctl") + " --address " +
                          c.head_address() + " status >/dev/null 2>&1";
        if (std::system(cmd.c_str()) != 0) ++failed;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failed.load(), 0);
  const long after = rss_kib(pid);
  // It grew ~3.8 MB over these 3,000 calls; now ~0.1 MB.
  EXPECT_LT(after - before, 2 * 1024) << before << " KiB -> " << after << " KiB";
}

}  // namespace atl::test

namespace atl::test {

// atlctl in the head's pod goes through the head's local door (an abstract
// Unix socket): the job's CA admits it (here a folder holding only ca.pem,
// with which TLS could not even start), another user is refused by the
// kernel's word, and ATL_LOCAL_DOOR=off goes over TCP as before.
TEST(Security, TheLocalDoorAdmitsTheJobsOwnUserAndCaOnly) {
  TestCluster c;
  auto& head = c.start_head({"--workers", "1", "--ready-timeout", "10m", "--", "true"});
  ASSERT_TRUE(c.wait_for_status("pending"));
  const std::string ca_only = c.dir() + "/ca-only";
  std::filesystem::create_directory(ca_only);
  std::filesystem::copy_file(c.state_dir() + "/tls/ca.pem", ca_only + "/ca.pem");
  auto& through_door = c.start("atlctl", {bin("atlctl"), "--address", c.head_address(), "status"},
                               {"ATL_TLS_DIR=" + ca_only});
  EXPECT_EQ(c.wait_exit(through_door), 0) << c.output(through_door);
  EXPECT_EQ(c.output(through_door), "Job status:  pending\n");
  auto& over_tcp = c.start("atlctl", {bin("atlctl"), "--address", c.head_address(), "status"},
                           {"ATL_TLS_DIR=" + ca_only, "ATL_LOCAL_DOOR=off"});
  EXPECT_EQ(c.wait_exit(over_tcp), 2) << c.output(over_tcp);
  EXPECT_NE(c.output(over_tcp).find("cert.pem"), std::string::npos) << c.output(over_tcp);

  // Another user: the door closes on it before reading a byte.
  if (::geteuid() == 0) {
    auto hp = parse_host_port(c.head_address());
    ASSERT_TRUE(hp.ok());
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string name = os::door_name("127.0.0.1", hp->port);
    std::memcpy(addr.sun_path + 1, name.data(), name.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    const std::string hello = encode_door_frame(std::string(kDoorHello) + "\n" +
                                                read_file(c.state_dir() + "/tls/ca.pem"));
    pid_t child = ::fork();
    if (child == 0) {
      // As nobody: connect, greet with the job's CA, and report what came back.
      if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
        ::_exit(10);
      int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) ::_exit(11);
      if (::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) < 0) ::_exit(0);  // refused
      char byte;
      ::_exit(::recv(fd, &byte, 1, 0) <= 0 ? 0 : 12);  // 0: closed without a word
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "10/11: could not become nobody or connect; 12: answered";
  }
  head.process->signal(SIGTERM);
  c.wait_exit(head);
}

}  // namespace atl::test
