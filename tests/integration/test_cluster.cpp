#include "test_cluster.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "atl/os/tls_credentials.hpp"
#include "common/free_ports.hpp"

namespace atl::test {

namespace {

bool is_zombie_or_gone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  if (!(stat >> pid_field >> comm >> state)) return true;
  return state == "Z";
}

void remove_tree(const std::string& path) {
  std::string cmd = "rm -rf '" + path + "'";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", path.c_str());
}

}  // namespace

std::string bin(const std::string& name) { return std::string(ATL_BIN_DIR) + "/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TestCluster::TestCluster() {
  char tmpl[] = "/tmp/atl-it-XXXXXX";
  dir_ = ::mkdtemp(tmpl);
  std::mt19937_64 rng(std::random_device{}());
  tag_ = std::to_string(rng());
  // Job ids are per cluster so parallel tests never share names.
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  job_id_ = "jo-";
  for (int i = 0; i < 16; ++i) job_id_ += kAlphabet[rng() % 36];
}

TestCluster::~TestCluster() {
  for (auto& s : started_) {
    if (s->process && !s->process->reaped()) {
      s->process->signal(SIGKILL);
      s->process->wait();
    }
  }
  // Anything that escaped (a rank reparented away) still carries the tag.
  for (int pid : live_tagged_processes()) ::kill(pid, SIGKILL);
  if (!::testing::Test::HasFailure()) {
    remove_tree(dir_);
  } else {
    std::fprintf(stderr, "test files kept in %s\n", dir_.c_str());
  }
}

std::string TestCluster::worker_name(int i) const {
  return job_id_ + "-worker-" + std::to_string(i);
}

std::vector<std::string> TestCluster::environment() const {
  auto env = os::current_environment();
  env.push_back("ATL_TEST_TAG=" + tag_);
  // The head makes the job's credentials there; workers and atlctl use them.
  env.push_back("ATL_TLS_DIR=" + state_dir() + "/tls");
  // Heads and node agents publish the job for atlctl here, not in /run/atl.
  env.push_back("ATL_JOB_FILE=" + dir_ + "/job.json");
  // Local pods' folders, and what ranks leave in their temp dir when killed
  // (a DataLoader's pymp-*, a rank's flight-recorder hook), go with the test's.
  env.erase(std::remove_if(env.begin(), env.end(),
                           [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; }),
            env.end());
  env.push_back("TMPDIR=" + dir_);
  // Ranks and drivers find atlctl on PATH, as in a pod.
  for (auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) e = "PATH=" + std::string(ATL_BIN_DIR) + ":" + e.substr(5);
  }
  return env;
}

Started& TestCluster::start(const std::string& name, std::vector<std::string> argv,
                            const std::vector<std::string>& env) {
  auto s = std::make_unique<Started>();
  s->name = name;
  s->output_path = dir_ + "/" + name + "-" + std::to_string(counter_++) + ".out";
  os::SpawnRequest req;
  req.argv = std::move(argv);
  req.env = environment();
  for (const auto& e : env) {
    std::string key = e.substr(0, e.find('=') + 1);
    req.env.erase(std::remove_if(req.env.begin(), req.env.end(),
                                 [&](const std::string& x) { return x.rfind(key, 0) == 0; }),
                  req.env.end());
    req.env.push_back(e);
  }
  req.output = os::OutputMode::file;
  req.output_file = s->output_path;
  auto child = os::ChildProcess::spawn(req);
  if (!child)
    ADD_FAILURE() << "cannot start " << name << ": " << child.error();
  else
    s->process = std::make_unique<os::ChildProcess>(std::move(*child));
  started_.push_back(std::move(s));
  return *started_.back();
}

Started& TestCluster::start_head(std::vector<std::string> args,
                                 const std::vector<std::string>& env) {
  std::vector<std::string> argv = {bin("headnode"), "--port", std::to_string(head_port_),
                                   "--job-id",      job_id_,  "--state-dir",
                                   state_dir()};
  address_.clear();
  // Flags go before a "--" entrypoint separator if there is one.
  argv.insert(argv.end(), args.begin(), args.end());
  head_ = &start("headnode", argv, env);
  return *head_;
}

void TestCluster::use_fixed_head_port() {
  // Below the ephemeral range: nobody binding 0 or connecting out takes it
  // while the head is down between two starts (free_ports.hpp).
  auto ports = unused_ports(1);
  if (ports.empty()) ADD_FAILURE() << "no free port";
  head_port_ = ports.empty() ? 0 : ports[0];
}

std::string TestCluster::head_address(std::chrono::milliseconds timeout) {
  if (!address_.empty()) return address_;
  if (!head_) {
    ADD_FAILURE() << "no head started";
    return "";
  }
  const std::string marker = "listening on ";
  if (!wait_for_output(*head_, marker, timeout)) {
    ADD_FAILURE() << "head printed no address:\n" << output(*head_);
    return "";
  }
  std::string out = output(*head_);
  auto at = out.find(marker) + marker.size();
  address_ = out.substr(at, out.find('\n', at) - at);
  return address_;
}

Started& TestCluster::start_worker(int index, std::vector<std::string> extra) {
  std::vector<std::string> argv = {bin("workernode"), "--head", head_address(), "--name",
                                   worker_name(index)};
  // Each its own node (as --local-workers pods are), unless the test says.
  if (std::find(extra.begin(), extra.end(), "--node") == extra.end())
    argv.insert(argv.end(), {"--node", "test-node-" + std::to_string(index)});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return start("worker" + std::to_string(index), argv);
}

int TestCluster::wait_exit(Started& p, std::chrono::milliseconds timeout) {
  if (!p.process) return -1;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto st = p.process->try_wait()) return st->code;
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << p.name << " did not exit in time; output:\n" << output(p);
  return -1;
}

std::string TestCluster::output(const Started& p) const { return read_file(p.output_path); }

bool TestCluster::wait_for_output(const Started& p, const std::string& text,
                                  std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (output(p).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

CommandResult TestCluster::atlctl(std::vector<std::string> args,
                                  std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {bin("atlctl")};
  argv.insert(argv.end(), args.begin(), args.end());
  Started& p = start("atlctl", argv);
  CommandResult r;
  r.exit_code = wait_exit(p, timeout);
  r.output = output(p);
  return r;
}

bool TestCluster::wait_for_status(const std::string& state, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string expected = "Job status:  " + state + "\n";
  while (std::chrono::steady_clock::now() < deadline) {
    if (atlctl({"--address", head_address(), "status"}).output == expected) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

void TestCluster::make_credentials() {
  ::mkdir(state_dir().c_str(), 0755);
  auto made = os::generate_tls_credentials(state_dir() + "/tls", job_id_);
  if (!made) ADD_FAILURE() << made.error();
}

namespace {

std::vector<std::string> command_line(int pid) {
  std::string raw = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> args;
  std::string cur;
  for (char ch : raw) {
    if (ch == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  return args;
}

int parent_of(int pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string state;
  int ppid = -1;
  rest >> state >> ppid;
  return state == "Z" ? -1 : ppid;
}

// argv[0] is workernode's path, or its name alone (a local pod forked by its
// head whose title had no room for the path: process_title.hpp).
bool is_workernode_of(const std::vector<std::string>& args, const std::string& pod) {
  if (args.empty()) return false;
  const std::string& first = args[0];
  if (first != "workernode" &&
      (first.size() < 11 || first.compare(first.size() - 11, 11, "/workernode") != 0))
    return false;
  return std::find(args.begin(), args.end(), pod) != args.end();
}

std::string pid_namespace_of(int pid) {
  char link[64] = {};
  std::string path = "/proc/" + std::to_string(pid) + "/ns/pid";
  ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
  return n > 0 ? std::string(link, static_cast<size_t>(n)) : "";
}

// The innermost of /proc/PID/status's NSpid numbers: the pid in its own namespace.
int innermost_pid(int pid) {
  std::istringstream status(read_file("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream numbers(line.substr(6));
    int n = -1, last = -1;
    while (numbers >> n) last = n;
    return last;
  }
  return -1;
}

}  // namespace

int TestCluster::worker_pid(int index) const {
  const std::string pod = worker_name(index);
  DIR* proc = ::opendir("/proc");
  if (!proc) return -1;
  int found = -1;
  while (dirent* e = ::readdir(proc)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0 || !is_workernode_of(command_line(pid), pod)) continue;
    // The workernode, not a fork of it that kept its command line (a rank's
    // guard was one before atl-guard): the one whose parent is not a workernode.
    int ppid = parent_of(pid);
    if (ppid <= 0 || is_workernode_of(command_line(ppid), pod)) continue;
    found = pid;
  }
  ::closedir(proc);
  return found;
}

int TestCluster::host_pid(int index, int pod_pid) const {
  const int worker = worker_pid(index);
  if (worker <= 0) return -1;
  const std::string ns = pid_namespace_of(worker);
  if (ns.empty() || ns == pid_namespace_of(::getpid())) return pod_pid;  // not isolated
  DIR* proc = ::opendir("/proc");
  if (!proc) return -1;
  int found = -1;
  while (dirent* e = ::readdir(proc)) {
    int pid = std::atoi(e->d_name);
    if (pid > 0 && pid_namespace_of(pid) == ns && innermost_pid(pid) == pod_pid) found = pid;
  }
  ::closedir(proc);
  return found;
}

std::vector<int> TestCluster::live_tagged_processes() const {
  std::vector<int> pids;
  const std::string needle = "ATL_TEST_TAG=" + tag_;
  DIR* proc = ::opendir("/proc");
  if (!proc) return pids;
  while (dirent* e = ::readdir(proc)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == ::getpid()) continue;
    std::string environ = read_file("/proc/" + std::to_string(pid) + "/environ");
    for (size_t at = 0; at < environ.size();) {
      size_t end = environ.find('\0', at);
      if (end == std::string::npos) end = environ.size();
      if (environ.compare(at, end - at, needle) == 0) {
        if (!is_zombie_or_gone(pid)) pids.push_back(pid);
        break;
      }
      at = end + 1;
    }
  }
  ::closedir(proc);
  return pids;
}

bool TestCluster::no_strays_within(std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (live_tagged_processes().empty()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return live_tagged_processes().empty();
}

}  // namespace atl::test
