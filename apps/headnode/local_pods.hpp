// LocalPods: headnode --local-workers plays the platform's part on one
// machine. It starts the worker pods as workernode processes and, as
// Kubernetes recreates a lost or deleted pod under the same name, starts a pod
// that exits again after the pod-restart delay, until the job is ending.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/os/child_process.hpp"
#include "atl/os/start_gate.hpp"

namespace atl::headnode {

struct LocalPodsConfig {
  std::string head_address;                   // HOST:PORT for --head
  std::vector<std::string> pod_names;         // one workernode each, on node local-<i>
  std::chrono::milliseconds restart_delay;    // before a pod that exited is started again
  std::shared_ptr<std::atomic<bool>> ending;  // set by the supervisor: recreate no more
  std::vector<std::string> extra_args;        // more workernode flags (the spec's resources)
  // Each pod advertises a loopback address of its own (127.0.0.2, .3, ...):
  // Ray tells its nodes apart by address, and one host's pods share one.
  bool own_loopback = false;
  // Each pod the first process of a PID namespace of its own, with its own
  // /proc (os::SpawnRequest::own_pid_namespace): `ps -ef`, `pkill -f` in a
  // pod (atlctl run, its terminal) see that pod only, as in a container.
  // Where the host allows it (os::pid_namespaces_available()).
  bool own_pid_namespace = false;
};

class LocalPods {
 public:
  explicit LocalPods(LocalPodsConfig config) : config_(std::move(config)) {}
  ~LocalPods();
  LocalPods(const LocalPods&) = delete;
  LocalPods& operator=(const LocalPods&) = delete;

  // Starts every pod, then a thread that recreates those that exit. An error
  // when one cannot be started (those started are killed). The pods wait at
  // a start gate (start_gate.hpp) until open_gate: they may start before the
  // head listens on head_address (its port held by a PortReservation).
  Status start();
  // The head listens: the pods waiting go on. Hands back each pod's line
  // (os/start_gate.hpp), the head's end, in pod order (-1: that pod is gone),
  // for the caller to serve (actors/pod_line.hpp) or close.
  std::vector<int> open_gate();

  // Stops recreating, waits (bounded) for every pod to exit, kills the rest.
  void stop_and_reap(std::chrono::milliseconds timeout = std::chrono::seconds(15));

 private:
  struct Pod {
    std::string name;
    int index = 0;
    std::unique_ptr<os::ChildProcess> process;  // null while waiting to be recreated
    std::chrono::steady_clock::time_point restart_at;
    int starts = 0;
    // The pod's own temp dir (its TMPDIR, and where its job file is), made
    // at each start and removed with the pod: a container's local disk is
    // gone with it, and so is what Ray, Tune, torch or the job left there.
    std::string tmp_dir;
  };
  // `generation`: 1 for the first start of the pod, k+1 for its k-th recreation.
  // `gate`: the start gate's end for the first pods, -1 for a recreated one.
  Expected<std::unique_ptr<os::ChildProcess>> spawn(Pod& pod, int generation, int gate = -1) const;
  void watch();     // the thread: reaps and recreates; it also spawns, so its pods die with it
  void reap_all();  // waits for every pod until deadline_, then kills
  static void remove_tmp(Pod& pod);

  LocalPodsConfig config_;
  std::optional<os::StartGate> gate_;  // closed unopened with this object: waiting pods end
  bool gate_opened_ = false;
  std::vector<Pod> pods_;
  std::atomic<bool> stopping_{false};
  std::mutex wake_mu_;  // stop_and_reap wakes the watcher at once, not at its next poll
  std::condition_variable wake_;
  std::chrono::steady_clock::time_point deadline_;  // written before stopping_ is set
  std::thread watcher_;
};

}  // namespace atl::headnode
