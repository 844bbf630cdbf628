#include "atl/os/machine.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

namespace atl::os {

namespace {

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

int detect_cpus() {
  cpu_set_t set;
  int cpus = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  // cgroup v2 quota: "max 100000" or "200000 100000".
  std::istringstream quota(read_first_line("/sys/fs/cgroup/cpu.max"));
  std::string q;
  long long period = 0;
  if (quota >> q >> period && q != "max" && period > 0) {
    long long limit = (std::stoll(q) + period - 1) / period;
    if (limit > 0 && limit < cpus) cpus = static_cast<int>(limit);
  }
  return cpus;
}

}  // namespace

int count_gpu_devices() {
  int count = 0;
  if (DIR* dir = opendir("/dev")) {
    while (dirent* e = readdir(dir)) {
      const char* n = e->d_name;
      if (std::strncmp(n, "nvidia", 6) != 0 || n[6] == '\0') continue;
      bool digits = true;
      for (const char* p = n + 6; *p; ++p) digits &= (*p >= '0' && *p <= '9');
      count += digits;
    }
    closedir(dir);
  }
  return count;
}

namespace {

std::int64_t detect_memory() {
  std::int64_t total = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::int64_t kb;
  while (meminfo >> key >> kb) {
    if (key == "MemTotal:") {
      total = kb * 1024;
      break;
    }
    meminfo.ignore(256, '\n');
  }
  std::string limit = read_first_line("/sys/fs/cgroup/memory.max");
  if (!limit.empty() && limit != "max") {
    std::int64_t l = std::stoll(limit);
    if (l > 0 && (total == 0 || l < total)) total = l;
  }
  return total;
}

std::int64_t detect_shm() {
  struct statvfs st {};
  if (statvfs("/dev/shm", &st) != 0) return 0;
  return static_cast<std::int64_t>(st.f_blocks) * static_cast<std::int64_t>(st.f_frsize);
}

}  // namespace

NodeResources detect_resources() {
  NodeResources r;
  r.cpus = detect_cpus();
  r.gpus = count_gpu_devices();
  r.memory = detect_memory();
  r.shm = detect_shm();
  return r;
}

Expected<std::string> local_address_towards(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res); rc != 0) {
    return make_error("cannot resolve " + host + ": " + gai_strerror(rc));
  }
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    // Connecting a UDP socket only picks a route: nothing is sent, and the
    // head's TCP port never sees a half-open probe connection.
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      sockaddr_storage local{};
      socklen_t len = sizeof local;
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
      char text[INET6_ADDRSTRLEN] = {};
      if (local.ss_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&local)->sin_addr, text, sizeof text);
      else
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr, text, sizeof text);
      close(fd);
      freeaddrinfo(res);
      return std::string(text);
    }
    last_error = strerror(errno);
    close(fd);
  }
  freeaddrinfo(res);
  return make_error("no route to " + host + ":" + port_s + ": " + last_error);
}

std::string interface_of_address(const std::string& address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i && found.empty(); i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
    else if (i->ifa_addr->sa_family == AF_INET6)
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, text,
                sizeof text);
    if (address == text) found = i->ifa_name;
  }
  freeifaddrs(list);
  return found;
}

Status check_writable_dir(const std::string& dir) {
  // A fresh name each time (mkstemp): concurrent checks in one process
  // (workernode --simulate) and a file left by a crashed process whose pid
  // comes back (pid 1 in every container) never collide.
  std::string probe = dir + "/.atl-write-check-XXXXXX";
  int fd = mkostemp(probe.data(), O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    // What to do depends on why: a path the pod lacks, or one it may not write.
    const char* todo = err == ENOENT   ? ": make it on every pod (a volume mounted there), or give "
                                         "the job a working dir the pods have"
                       : err == EROFS  ? ": it is read-only on the pod; give a writable one"
                       : err == EACCES ? ": the job's user may not write there; fix its owner or "
                                         "mode, or give another"
                                       : "";
    return make_error("working dir " + dir + " is not writable: " + strerror(err) + todo);
  }
  bool wrote = write(fd, "ok\n", 3) == 3;
  int err = errno;
  close(fd);
  unlink(probe.c_str());
  if (!wrote) return make_error("cannot write in working dir " + dir + ": " + strerror(err));
  return Ok{};
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

Status check_resolvable(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found) ::freeaddrinfo(found);
  if (rc != 0) return make_error("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  return Ok{};
}

namespace {

// The numeric forms `host` resolves to (an address resolves to itself).
std::vector<std::string> numeric_addresses(const std::string& host) {
  std::vector<std::string> out;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return out;
  for (addrinfo* a = found; a; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) ==
        0)
      out.push_back(text);
  }
  ::freeaddrinfo(found);
  return out;
}

}  // namespace

std::string own_dns_name(const std::string& name, const std::string& address,
                         std::chrono::milliseconds within) {
  if (name.empty() || host_name() != name) return "";
  auto answer = std::make_shared<std::promise<bool>>();
  auto result = answer->get_future();
  std::thread([answer, name, address] {
    const auto mine = numeric_addresses(address);
    const auto named = numeric_addresses(name);
    bool same = false;
    for (const auto& a : named) same = same || std::find(mine.begin(), mine.end(), a) != mine.end();
    answer->set_value(same);
  }).detach();
  if (result.wait_for(within) != std::future_status::ready) return "";
  return result.get() ? name : "";
}

int shutdown_connections_to(const std::string& host, std::uint16_t port) {
  // Every address the name stands for: the connection may use any of them.
  std::vector<sockaddr_storage> targets;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0) {
    for (addrinfo* a = found; a; a = a->ai_next) {
      sockaddr_storage s{};
      std::memcpy(&s, a->ai_addr, a->ai_addrlen);
      targets.push_back(s);
    }
    ::freeaddrinfo(found);
  }
  auto same_host = [&](const sockaddr_storage& peer) {
    for (const auto& t : targets) {
      if (t.ss_family != peer.ss_family) continue;
      if (peer.ss_family == AF_INET &&
          reinterpret_cast<const sockaddr_in&>(t).sin_addr.s_addr ==
              reinterpret_cast<const sockaddr_in&>(peer).sin_addr.s_addr)
        return true;
      if (peer.ss_family == AF_INET6 &&
          std::memcmp(&reinterpret_cast<const sockaddr_in6&>(t).sin6_addr,
                      &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr,
                      sizeof(in6_addr)) == 0)
        return true;
    }
    return false;
  };
  int shut = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return 0;
  std::vector<int> fds;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == 0 && fd != ::dirfd(dir)) fds.push_back(static_cast<int>(fd));
  }
  ::closedir(dir);
  for (int fd : fds) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    std::uint16_t peer_port = 0;
    if (peer.ss_family == AF_INET)
      peer_port = ntohs(reinterpret_cast<const sockaddr_in&>(peer).sin_port);
    else if (peer.ss_family == AF_INET6)
      peer_port = ntohs(reinterpret_cast<const sockaddr_in6&>(peer).sin6_port);
    else
      continue;
    if (peer_port != port || !same_host(peer)) continue;
    if (::shutdown(fd, SHUT_RDWR) == 0) ++shut;
  }
  return shut;
}

}  // namespace atl::os
