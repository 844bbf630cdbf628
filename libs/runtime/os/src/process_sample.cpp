#include "atl/os/process_sample.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <vector>

#include "atl/os/child_process.hpp"
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

TreeSample sample_tree(const ProcessTable& table, const ChildIndex& children, pid_t root,
                       const ProcessFacts& facts) {
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
    out.io_bytes += facts.io_bytes(pid);
    if (s.state != 'Z') out.state = worse_state(out.state, s.state);
    auto kids = children.find(pid);
    if (kids != children.end()) todo.insert(todo.end(), kids->second.begin(), kids->second.end());
  }
  return out;
}

namespace {

bool is_python(const ProcStat& s) { return s.comm.rfind("python", 0) == 0; }

std::string read_small_file(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::string out(limit, '\0');
  in.read(&out[0], static_cast<std::streamsize>(limit));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

}  // namespace

const ProcessFacts& live_facts() {
  static const ProcessFacts facts{
      [](pid_t pid) {
        std::string line = read_small_file("/proc/" + std::to_string(pid) + "/cmdline", 4096);
        while (!line.empty() && line.back() == '\0') line.pop_back();
        std::replace(line.begin(), line.end(), '\0', ' ');
        return line;
      },
      [](pid_t pid) {
        // Only asked where a rank's tree holds several interpreters.
        std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
        std::string line;
        while (std::getline(maps, line))
          if (line.find("libtorch") != std::string::npos) return true;
        return false;
      },
      [](pid_t pid) -> std::int64_t {
        const std::string io = read_small_file("/proc/" + std::to_string(pid) + "/io", 512);
        std::int64_t total = 0;
        for (const char* key : {"rchar: ", "wchar: "}) {
          const size_t at = io.find(key);
          if (at != std::string::npos) total += std::atoll(io.c_str() + at + 7);
        }
        return total;
      }};
  return facts;
}

const ProcessFacts& no_facts() {
  static const ProcessFacts facts{[](pid_t) { return std::string(); }, [](pid_t) { return false; },
                                  [](pid_t) -> std::int64_t { return 0; }};
  return facts;
}

bool is_helper(const ProcessTable& table, pid_t pid, pid_t parent, const ProcessFacts& facts) {
  auto self = table.find(pid);
  auto up = table.find(parent);
  if (self == table.end() || up == table.end()) return false;
  const std::string line = facts.cmdline(pid);
  // Spawned or forkserver children, their resource tracker, torch's
  // compile workers: their command lines say so.
  if (is_python(self->second))
    for (const char* mark : {"multiprocessing", "compile_worker"})
      if (line.find(mark) != std::string::npos) return true;
  // A fork of a Python that did not exec (DataLoader workers, the default
  // start method on Linux): its command line is its parent's, word for
  // word, whatever it calls itself (torch 2.9 names its loader workers
  // "pt_data_worker").
  return is_python(up->second) && !line.empty() && line == facts.cmdline(parent);
}

RankProcesses rank_processes(const ProcessTable& table, const ChildIndex& children, pid_t root,
                             const ProcessFacts& given) {
  RankProcesses out;
  if (!table.count(root)) return out;
  // Each command line read once per walk: a parent's is compared with each
  // of its children's (a rank's loader workers), every sample.
  std::unordered_map<pid_t, std::string> lines;
  const ProcessFacts facts{[&](pid_t pid) {
                             auto it = lines.find(pid);
                             if (it == lines.end())
                               it = lines.emplace(pid, given.cmdline(pid)).first;
                             return it->second;
                           },
                           given.holds_torch, given.io_bytes};
  // Every process but the helpers' subtrees, with its depth.
  struct Seen {
    pid_t pid;
    int depth;
  };
  std::vector<Seen> pythons;
  Seen deepest{root, 0};
  std::vector<Seen> todo{{root, 0}};
  while (!todo.empty()) {
    const Seen at = todo.back();
    todo.pop_back();
    auto it = table.find(at.pid);
    if (it == table.end() || it->second.state == 'Z') continue;
    if (at.depth > deepest.depth || (at.depth == deepest.depth && at.pid < deepest.pid))
      deepest = at;
    if (is_python(it->second)) pythons.push_back(at);
    auto kids = children.find(at.pid);
    if (kids == children.end()) continue;
    for (pid_t k : kids->second)
      if (!is_helper(table, k, at.pid, facts)) todo.push_back({k, at.depth + 1});
  }
  auto deeper = [](const Seen& a, const Seen& b) {
    return a.depth != b.depth ? a.depth > b.depth : a.pid < b.pid;
  };
  std::sort(pythons.begin(), pythons.end(), deeper);
  if (pythons.empty()) {
    out.main = deepest.pid;
  } else if (pythons.size() == 1) {
    out.main = pythons.front().pid;
  } else {
    out.main = pythons.front().pid;
    for (const Seen& p : pythons)
      if (facts.holds_torch(p.pid)) {
        out.main = p.pid;
        break;
      }
  }
  // The main's helpers, and theirs (a forkserver's forks).
  std::vector<pid_t> below{out.main};
  while (!below.empty()) {
    const pid_t pid = below.back();
    below.pop_back();
    auto kids = children.find(pid);
    if (kids == children.end()) continue;
    for (pid_t k : kids->second) {
      auto it = table.find(k);
      if (it == table.end() || it->second.state == 'Z' || !is_helper(table, k, pid, facts))
        continue;
      out.helpers.push_back(k);
      below.push_back(k);
    }
  }
  std::sort(out.helpers.begin(), out.helpers.end());
  return out;
}

pid_t stack_target(const ProcessTable& table, pid_t root) {
  return stack_target(table, child_index(table), root);
}

pid_t stack_target(const ProcessTable& table, const ChildIndex& children, pid_t root,
                   const ProcessFacts& facts) {
  return rank_processes(table, children, root, facts).main;
}

StackCapture capture_stack(const ProcessTable& table, pid_t root,
                           std::chrono::milliseconds timeout) {
  return capture_stack(table, child_index(table), root, timeout);
}

namespace {

// A diagnosis tool (py-spy, gdb) from the node's own PATH (the workernode's
// environment, fixed when it started) or atl's install dir: never from
// beside the rank's interpreter or anywhere else the job's files choose (it
// runs as the node's user, often root, with every capability).
std::string diagnosis_tool(const std::string& name) {
  const std::string install = executable_dir();  // "." when unknown: not looked in
  return find_program(
      name, install == "." ? std::vector<std::string>{} : std::vector<std::string>{install});
}

}  // namespace

StackCapture capture_stack(const ProcessTable& table, const ChildIndex& children, pid_t root,
                           std::chrono::milliseconds timeout, bool may_stop) {
  StackCapture out;
  const RankProcesses rank = rank_processes(table, children, root, live_facts());
  out.target = rank.main;
  if (out.target == 0) {
    out.error = "the rank's processes are gone";
    return out;
  }
  const std::string pid = std::to_string(out.target);
  const bool python = is_python(table.at(out.target));
  const std::string py_spy = python ? diagnosis_tool("py-spy") : std::string();
  std::vector<std::string> argv;
  if (!py_spy.empty()) {
    out.tool = "py-spy";
    argv = {py_spy, "dump", "--nonblocking", "--pid", pid};
  } else if (!may_stop) {
    out.error = "not taken: the rank computes, and gdb's attach would stop it";
    return out;
  } else if (std::string gdb = diagnosis_tool("gdb"); !gdb.empty()) {
    out.tool = "gdb";
    // The main thread's only: the signature is its, and a process with
    // many threads would otherwise push it past the size bound.
    argv = {gdb, "-batch", "-nx", "-p", pid, "-ex", "thread apply 1 bt"};
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
  // The helpers' (DataLoader workers'): where a rank waits for its data,
  // the worker that does not deliver is the one to name. py-spy only: it
  // never stops them.
  if (py_spy.empty()) return out;
  for (pid_t helper : rank.helpers) {
    if (out.helpers.size() == kMaxHelperStacks) break;
    auto h = run_capture({py_spy, "dump", "--nonblocking", "--pid", std::to_string(helper)},
                         timeout, 16 << 10);
    out.helpers.push_back(helper);
    out.helper_texts.push_back(h && !h->timed_out ? std::move(h->output) : std::string());
  }
  return out;
}

}  // namespace atl::os

namespace atl::os {

pid_t user_process(const ProcessTable& table, const ChildIndex& children, pid_t root,
                   const ProcessFacts& facts) {
  if (!table.count(root)) return 0;
  const pid_t main = rank_processes(table, children, root, facts).main;
  if (main != 0 && is_python(table.at(main))) return main;
  // No Python: the entrypoint under the guard (its shell, not what it runs).
  auto kids = children.find(root);
  if (kids == children.end()) return root;
  pid_t first = 0;
  for (pid_t k : kids->second) {
    auto it = table.find(k);
    if (it != table.end() && it->second.state != 'Z' && (first == 0 || k < first)) first = k;
  }
  return first ? first : root;
}

}  // namespace atl::os
