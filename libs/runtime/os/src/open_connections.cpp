#include "atl/os/open_connections.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace atl::os {

namespace {

std::uint16_t port_of(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  if (addr.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  return 0;
}

// A connected TCP socket on `port`, still established.
bool client_on(int fd, std::uint16_t port) {
  sockaddr_storage local{}, peer{};
  socklen_t len = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return false;
  if (port_of(local) != port) return false;
  len = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return false;  // a listener
  tcp_info info{};
  len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  return info.tcpi_state == TCP_ESTABLISHED;
}

}  // namespace

Expected<std::size_t> clients_connected_on(std::uint16_t port) {
  DIR* fds = ::opendir("/proc/self/fd");
  if (!fds) return make_error(std::string("cannot read /proc/self/fd: ") + std::strerror(errno));
  const int own = ::dirfd(fds);
  std::size_t found = 0;
  while (dirent* e = ::readdir(fds)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || end == e->d_name || fd == own) continue;
    if (client_on(static_cast<int>(fd), port)) ++found;
  }
  ::closedir(fds);
  return found;
}

std::vector<std::uint64_t> listening_inodes(const std::string& proc_net_tcp, std::uint16_t port) {
  std::vector<std::uint64_t> out;
  std::istringstream lines(proc_net_tcp);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode))
      continue;
    if (state != "0A") continue;  // TCP_LISTEN
    const auto colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    char* end = nullptr;
    const unsigned long local_port = std::strtoul(local.c_str() + colon + 1, &end, 16);
    if (*end != '\0' || local_port != port) continue;
    const unsigned long long number = std::strtoull(inode.c_str(), &end, 10);
    if (*end != '\0' || number == 0) continue;
    out.push_back(number);
  }
  return out;
}

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<PortHolder> who_listens_on(std::uint16_t port) {
  std::set<std::uint64_t> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"})
    for (auto inode : listening_inodes(read_all(table), port)) inodes.insert(inode);
  if (inodes.empty()) return std::nullopt;
  DIR* procs = ::opendir("/proc");
  if (!procs) return std::nullopt;
  std::optional<PortHolder> found;
  while (dirent* p = ::readdir(procs)) {
    char* end = nullptr;
    const long pid = std::strtol(p->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string fd_dir = std::string("/proc/") + p->d_name + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (!fds) continue;  // not ours to look at
    while (dirent* f = ::readdir(fds)) {
      char target[64];
      const ssize_t n = ::readlinkat(::dirfd(fds), f->d_name, target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      unsigned long long inode = 0;
      if (std::sscanf(target, "socket:[%llu]", &inode) != 1 || !inodes.count(inode)) continue;
      found = PortHolder{static_cast<int>(pid), "", ""};
      break;
    }
    ::closedir(fds);
    if (found) break;
  }
  ::closedir(procs);
  if (!found) return std::nullopt;
  const std::string base = "/proc/" + std::to_string(found->pid);
  found->name = read_all(base + "/comm");
  while (!found->name.empty() && found->name.back() == '\n') found->name.pop_back();
  const std::string env = read_all(base + "/environ");
  for (std::size_t at = 0; at < env.size();) {
    const std::size_t nul = env.find('\0', at);
    const std::string entry =
        env.substr(at, nul == std::string::npos ? std::string::npos : nul - at);
    if (entry.rfind("ATL_JOB_ID=", 0) == 0) found->job_id = entry.substr(11);
    if (nul == std::string::npos) break;
    at = nul + 1;
  }
  return found;
}

std::string describe_port_holder(const std::optional<PortHolder>& holder) {
  if (!holder) return "";
  std::string what = holder->name.empty() ? "a process" : holder->name;
  what += " (pid " + std::to_string(holder->pid) + ")";
  return holder->job_id.empty() ? what : "job " + holder->job_id + "'s " + what;
}

}  // namespace atl::os
