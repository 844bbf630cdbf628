// TestCluster: starts real headnode/workernode/atlctl processes on 127.0.0.1
// with ports picked at run time, waits for events in their output, and kills
// everything it started when it goes out of scope, even after a failed assert.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "atl/os/child_process.hpp"

namespace atl::test {

using namespace std::chrono_literals;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved
};

// A process started by the cluster, its output going to a file.
struct Started {
  std::string name;
  std::string output_path;
  std::unique_ptr<os::ChildProcess> process;
};

class TestCluster {
 public:
  TestCluster();
  ~TestCluster();

  const std::string& dir() const { return dir_; }
  const std::string& job_id() const { return job_id_; }
  void use_fixed_head_port();
  std::string state_dir() const { return dir_ + "/state"; }
  std::string worker_name(int i) const;

  // headnode --port <head port> --job-id <id> --state-dir <dir>/state ARGS...
  // (port 0, any free one, unless use_fixed_head_port() picked one: a
  // restarted head then comes back where its workers look for it). Each call
  // starts a new head; head_address() follows the latest.
  Started& start_head(std::vector<std::string> args, const std::vector<std::string>& env = {});
  // The address the head printed; fails the test if none within the timeout.
  std::string head_address(std::chrono::milliseconds timeout = 30s);
  Started& start_worker(int index, std::vector<std::string> extra = {});
  // `env` entries ("K=V") replace the cluster environment's ones of the same name.
  Started& start(const std::string& name, std::vector<std::string> argv,
                 const std::vector<std::string>& env = {});

  // Waits for the process to exit; -1 if it did not within the timeout.
  int wait_exit(Started& p, std::chrono::milliseconds timeout = 120s);
  std::string output(const Started& p) const;
  // Polls p's output until `text` appears; false on timeout.
  bool wait_for_output(const Started& p, const std::string& text,
                       std::chrono::milliseconds timeout = 60s) const;

  CommandResult atlctl(std::vector<std::string> args, std::chrono::milliseconds timeout = 60s);
  // Runs `atlctl status` until it prints `state` (or the timeout passes).
  bool wait_for_status(const std::string& state, std::chrono::milliseconds timeout = 60s);

  // The pid of the workernode process of pod `index` (started by the head with
  // --local-workers, or by start_worker); -1 when there is none now.
  int worker_pid(int index) const;
  // The host's number of process `pod_pid` of local pod `index`: a pod in a
  // PID namespace of its own (headnode --isolate-local-pods) and atl's
  // status number its processes in that namespace. -1: none such.
  int host_pid(int index, int pod_pid) const;

  // Processes carrying this cluster's tag in their environment (zombies excluded).
  std::vector<int> live_tagged_processes() const;
  // Waits until none is left; the test asserts on the result.
  bool no_strays_within(std::chrono::milliseconds timeout = 20s) const;

  std::vector<std::string> environment() const;

  // Makes the job's credentials where the head would (state_dir()/tls), for
  // tests that run workernode or atlctl without a head.
  void make_credentials();

 private:
  std::string dir_;
  std::string tag_;
  std::string job_id_;
  std::string address_;
  Started* head_ = nullptr;
  std::vector<std::unique_ptr<Started>> started_;
  int counter_ = 0;
  int head_port_ = 0;
};

std::string bin(const std::string& name);
std::string read_file(const std::string& path);
int count_lines(const std::string& text);

}  // namespace atl::test
