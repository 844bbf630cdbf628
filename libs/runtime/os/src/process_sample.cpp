#include "atl/os/process_sample.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "atl/os/run_capture.hpp"

namespace atl::os {

namespace {

int rank_of(char state) {
  switch (state) {
    case 'T':
    case 't':
      return 3;
    case 'D':
      return 2;
    case 'R':
      return 1;
    default:
      return 0;
  }
}

char canonical(char state) {
  switch (rank_of(state)) {
    case 3:
      return 'T';
    case 2:
      return 'D';
    case 1:
      return 'R';
    default:
      return 'S';
  }
}

}  // namespace

char worse_state(char a, char b) { return rank_of(a) >= rank_of(b) ? canonical(a) : canonical(b); }

Expected<ProcStat> parse_proc_stat(std::string_view line) {
  const size_t open = line.find('(');
  const size_t close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return make_error("proc stat: no '(comm)'");
  ProcStat s;
  std::string_view pid_text = line.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  std::int64_t pid = 0;
  for (char c : pid_text) {
    if (c < '0' || c > '9' || pid > 1'000'000'000) return make_error("proc stat: bad pid");
    pid = pid * 10 + (c - '0');
  }
  if (pid_text.empty()) return make_error("proc stat: no pid");
  s.pid = static_cast<pid_t>(pid);
  s.comm = std::string(line.substr(open + 1, close - open - 1));
  // After the comm: state (field 3), then numbers; utime/stime/cutime/cstime
  // are fields 14-17, num_threads 20, rss 24.
  std::string_view rest = line.substr(close + 1);
  std::vector<std::string_view> f;
  size_t i = 0;
  while (i < rest.size() && f.size() < 22) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != '\n') ++j;
    if (j > i) f.push_back(rest.substr(i, j - i));
    i = j + 1;
  }
  if (f.size() < 22 || f[0].size() != 1) return make_error("proc stat: too few fields");
  auto number = [](std::string_view t, std::int64_t* out) {
    std::int64_t v = 0;
    bool neg = !t.empty() && t[0] == '-';
    if (neg) t.remove_prefix(1);
    if (t.empty() || t.size() > 18) return false;
    for (char c : t) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = neg ? -v : v;
    return true;
  };
  s.state = f[0][0];
  std::int64_t ppid = 0, utime = 0, stime = 0, cutime = 0, cstime = 0, threads = 0, rss = 0;
  // f[k] is field k+3.
  if (!number(f[1], &ppid) || !number(f[11], &utime) || !number(f[12], &stime) ||
      !number(f[13], &cutime) || !number(f[14], &cstime) || !number(f[17], &threads) ||
      !number(f[21], &rss))
    return make_error("proc stat: a field is not a number");
  s.ppid = static_cast<pid_t>(ppid);
  s.cpu_ticks = utime + stime + cutime + cstime;
  s.threads = static_cast<std::int32_t>(threads);
  s.rss_pages = rss;
  return s;
}

ProcessTable read_process_table() {
  ProcessTable table;
  DIR* dir = ::opendir("/proc");
  if (!dir) return table;
  while (dirent* e = ::readdir(dir)) {
    const char* name = e->d_name;
    if (name[0] < '1' || name[0] > '9') continue;
    std::string path = std::string("/proc/") + name + "/stat";
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile
    char buf[1024];
    ssize_t got = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (got <= 0) continue;
    if (auto s = parse_proc_stat(std::string_view(buf, static_cast<size_t>(got))))
      table.emplace(s->pid, std::move(*s));
  }
  ::closedir(dir);
  return table;
}

ChildIndex child_index(const ProcessTable& table) {
  ChildIndex children;
  for (const auto& [pid, s] : table) children[s.ppid].push_back(pid);
  return children;
}

TreeSample sample_tree(const ProcessTable& table, pid_t root) {
  return sample_tree(table, child_index(table), root);
}

TreeSample sample_tree(const ProcessTable& table, const ChildIndex& children, pid_t root) {
  TreeSample out;
  if (!table.count(root)) return out;
  static const std::int64_t page = ::sysconf(_SC_PAGESIZE);
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t pid = todo.back();
    todo.pop_back();
    auto it = table.find(pid);
    if (it == table.end()) continue;
    const ProcStat& s = it->second;
    ++out.processes;
    out.cpu_ticks += s.cpu_ticks;
    out.rss_bytes += s.rss_pages * page;
    if (s.state != 'Z') out.state = worse_state(out.state, s.state);
    auto kids = children.find(pid);
    if (kids != children.end()) todo.insert(todo.end(), kids->second.begin(), kids->second.end());
  }
  return out;
}

pid_t stack_target(const ProcessTable& table, pid_t root) {
  return stack_target(table, child_index(table), root);
}

pid_t stack_target(const ProcessTable& table, const ChildIndex& children, pid_t root) {
  if (!table.count(root)) return 0;
  pid_t deepest = root, python = 0;
  int deepest_depth = -1, python_depth = -1;
  std::vector<std::pair<pid_t, int>> todo{{root, 0}};
  while (!todo.empty()) {
    auto [pid, depth] = todo.back();
    todo.pop_back();
    auto it = table.find(pid);
    if (it == table.end() || it->second.state == 'Z') continue;
    if (depth > deepest_depth) deepest = pid, deepest_depth = depth;
    if (it->second.comm.rfind("python", 0) == 0 && depth > python_depth)
      python = pid, python_depth = depth;
    auto kids = children.find(pid);
    if (kids != children.end())
      for (pid_t k : kids->second) todo.emplace_back(k, depth + 1);
  }
  return python ? python : deepest;
}

StackCapture capture_stack(const ProcessTable& table, pid_t root,
                           std::chrono::milliseconds timeout) {
  return capture_stack(table, child_index(table), root, timeout);
}

StackCapture capture_stack(const ProcessTable& table, const ChildIndex& children, pid_t root,
                           std::chrono::milliseconds timeout) {
  StackCapture out;
  out.target = stack_target(table, children, root);
  if (out.target == 0) {
    out.error = "the rank's processes are gone";
    return out;
  }
  const std::string pid = std::to_string(out.target);
  const bool python = table.at(out.target).comm.rfind("python", 0) == 0;
  std::string tool_path;
  std::vector<std::string> argv;
  if (python) {
    // py-spy on PATH, or beside the interpreter (a venv's bin).
    std::vector<std::string> beside;
    char exe[4096];
    ssize_t n = ::readlink(("/proc/" + pid + "/exe").c_str(), exe, sizeof exe - 1);
    if (n > 0) {
      std::string e(exe, static_cast<size_t>(n));
      beside.push_back(e.substr(0, e.rfind('/')));
    }
    tool_path = find_program("py-spy", beside);
    if (!tool_path.empty()) {
      out.tool = "py-spy";
      argv = {tool_path, "dump", "--nonblocking", "--pid", pid};
    }
  }
  if (argv.empty()) {
    tool_path = find_program("gdb");
    if (!tool_path.empty()) {
      out.tool = "gdb";
      // The main thread's only: the signature is its, and a process with
      // many threads would otherwise push it past the size bound.
      argv = {tool_path, "-batch", "-nx", "-p", pid, "-ex", "thread apply 1 bt"};
    }
  }
  if (argv.empty()) {
    out.error = python ? "neither py-spy nor gdb is in the pod" : "gdb is not in the pod";
    return out;
  }
  // What reaches the head for every rank of the job: 64 KiB each at most
  // (py-spy prints the main thread first; gdb prints only it).
  auto got = run_capture(argv, timeout, 64 << 10);
  if (!got) {
    out.error = got.error();
  } else {
    out.text = std::move(got->output);
    if (got->timed_out)
      out.error = out.tool + " did not finish within " + std::to_string(timeout.count()) + " ms";
  }
  return out;
}

}  // namespace atl::os

namespace atl::os {

pid_t user_process(const ProcessTable& table, const ChildIndex& children, pid_t root) {
  if (!table.count(root)) return 0;
  // Breadth first: the shallowest python wins.
  std::vector<pid_t> level{root};
  pid_t first_child = 0;
  for (int depth = 0; !level.empty(); ++depth) {
    std::vector<pid_t> next;
    for (pid_t pid : level) {
      auto it = table.find(pid);
      if (it == table.end() || it->second.state == 'Z') continue;
      if (it->second.comm.rfind("python", 0) == 0) return pid;
      if (depth == 1 && first_child == 0) first_child = pid;
      auto kids = children.find(pid);
      if (kids == children.end()) continue;
      std::vector<pid_t> sorted = kids->second;
      std::sort(sorted.begin(), sorted.end());
      next.insert(next.end(), sorted.begin(), sorted.end());
    }
    level = std::move(next);
  }
  return first_child ? first_child : root;
}

}  // namespace atl::os
