#include "atl/os/oom_kills.hpp"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace atl::os {

namespace {

std::string read_small(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<std::int64_t> count_in(const std::string& path) {
  const std::string text = read_small(path);
  return text.empty() ? std::nullopt : parse_oom_kill(text);
}

std::string plural(std::int64_t n, const char* one) {
  return n == 1 ? std::string("a ") + one : std::to_string(n) + " " + one + "es";
}

}  // namespace

std::optional<std::int64_t> parse_oom_kill(std::string_view text) {
  constexpr std::string_view kKey = "oom_kill ";
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    std::int64_t n = 0;
    std::string_view digits = line.substr(kKey.size());
    if (digits.empty()) return std::nullopt;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    return n;
  }
  return std::nullopt;
}

std::vector<std::string> oom_count_files(std::string_view proc_self_cgroup) {
  std::vector<std::string> files;
  std::string v2_path, v1_path;
  bool v1 = false;
  std::istringstream lines{std::string(proc_self_cgroup)};
  std::string line;
  while (std::getline(lines, line)) {
    // ID:CONTROLLERS:PATH (PATH may hold colons)
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) v2_path = path;
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');)
      if (name == "memory") {
        v1 = true;
        v1_path = path;
      }
  }
  auto under = [](const std::string& mount, const std::string& path, const char* file) {
    return mount + (path == "/" ? "" : path) + "/" + file;
  };
  if (v1) {
    files.push_back(under("/sys/fs/cgroup/memory", v1_path, "memory.oom_control"));
    files.push_back("/sys/fs/cgroup/memory/memory.oom_control");
  } else if (!v2_path.empty()) {
    files.push_back(under("/sys/fs/cgroup", v2_path, "memory.events"));
    files.push_back(under("/sys/fs/cgroup/unified", v2_path, "memory.events"));
    files.push_back("/sys/fs/cgroup/memory.events");
  }
  return files;
}

OomKills read_oom_kills() {
  OomKills now;
  static const std::vector<std::string> files = oom_count_files(read_small("/proc/self/cgroup"));
  for (const auto& f : files)
    if ((now.pod = count_in(f))) break;
  now.host = count_in("/proc/vmstat");
  return now;
}

std::optional<std::string> oom_hint(const OomKills& before, const OomKills& after,
                                    const ExitStatus& status) {
  if (status.success()) return std::nullopt;
  const auto grew = [](const std::optional<std::int64_t>& a,
                       const std::optional<std::int64_t>& b) -> std::int64_t {
    return a && b && *b > *a ? *b - *a : 0;
  };
  if (const auto n = grew(before.pod, after.pod); n > 0)
    return "out of memory: the kernel's OOM killer ended " + plural(n, "process") +
           " of this pod while it ran; give the pod more memory, or use less (smaller "
           "batches, fewer DataLoader workers)";
  if (const auto n = grew(before.host, after.host); n > 0)
    return "out of memory? the kernel's OOM killer ended " + plural(n, "process") +
           " on this host while it ran";
  if (status.signal == SIGKILL && !(before.pod && after.pod) && !(before.host && after.host))
    return "out of memory? (SIGKILL is the OOM killer's signal; this host's OOM counts "
           "cannot be read)";
  return std::nullopt;
}

}  // namespace atl::os
