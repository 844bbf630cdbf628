#include "local_pods.hpp"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "atl/actors/node_agent.hpp"
#include "atl/core/duration.hpp"
#include "atl/core/env.hpp"
#include "atl/os/logging.hpp"
#include "workernode_main.hpp"

namespace atl::headnode {

namespace {

constexpr auto kPoll = std::chrono::milliseconds(20);

// The base the pods' temp dirs go in: the head's TMPDIR, else /tmp.
std::string tmp_base() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

}  // namespace

LocalPods::~LocalPods() {
  // Pods still at the gate hear that the head is gone and end, quietly: they
  // are waited for (a failed start's one line is the head's); pods past it
  // were stopped and reaped before (stop_and_reap), or are killed now.
  const bool at_gate = gate_ && !gate_opened_;
  gate_.reset();
  stop_and_reap(at_gate ? std::chrono::seconds(5) : std::chrono::seconds(0));
}

void LocalPods::remove_tmp(Pod& pod) {
  if (pod.tmp_dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(pod.tmp_dir, ec);  // links removed, never followed
  pod.tmp_dir.clear();
}

Expected<std::unique_ptr<os::ChildProcess>> LocalPods::spawn(Pod& pod, int generation,
                                                             int gate) const {
  const std::string& name = pod.name;
  const int index = pod.index;
  std::string tmpl = tmp_base() + "/atl-pod-XXXXXX";  // short: Ray's socket paths grow from it
  if (!::mkdtemp(tmpl.data()))
    return make_error("cannot start local worker " + name + ": cannot make its temp dir in " +
                      tmp_base() + ": " + std::strerror(errno));
  pod.tmp_dir = tmpl;
  os::SpawnRequest req;
  // Each local pod on a node of its own, so that a taint marks just it; a
  // recreated pod lands on a new one (local-<i>-<k>), as Kubernetes places a
  // recreated pod away from a tainted or failed machine.
  std::string node = "local-" + std::to_string(index);
  if (generation > 1) node += "-" + std::to_string(generation - 1);
  // --name first: a forked pod's title keeps what fits of it (process_title.hpp).
  req.argv = {os::executable_dir() + "/workernode",
              "--name",
              name,
              "--head",
              config_.head_address,
              "--node",
              node,
              "--connect-timeout",
              "30s"};
  req.argv.insert(req.argv.end(), config_.extra_args.begin(), config_.extra_args.end());
  if (config_.own_loopback)
    req.argv.insert(req.argv.end(), {"--advertise", "127.0.0." + std::to_string(index + 2)});
  EnvMap env = env_from_strings(os::current_environment());
  env["TMPDIR"] = pod.tmp_dir;
  // atlctl in the pod finds its job here; the host's job files stay the head's.
  env["ATL_JOB_FILE"] = pod.tmp_dir + "/atl/job.json";
  // Its CAF nodes' ids apart from other local pods' (node_id_interpose.cpp):
  // in PID namespaces of their own, every pod's workernode is pid 1.
  env["ATL_NODE_SALT"] = name + "#" + std::to_string(generation);
  req.env = to_env_strings(env);
  if (gate >= 0) {
    req.control_fd = gate;
    req.env.push_back(std::string(os::kStartGateEnv) + "=" + std::to_string(os::kStartGateFd));
  }
  req.output = os::OutputMode::inherit;
  // The first pods, started before the head's threads: forks that run
  // workernode's main (nothing to load: ~5 ms of CPU less each on a 2-core
  // pod); a recreated pod, started by the head with its threads, execs it.
  if (gate >= 0) {
    req.instead_of_exec = [args = req.argv]() mutable {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      return workernode::main(static_cast<int>(args.size()), argv.data());
    };
  }
  // A workernode guards its own ranks (each under an atl-guard, with its
  // pdeathsig): it needs no keeper of its own, only to die with the head.
  req.guarded = false;
  // PID 1 of a namespace of its own, the first pods forks as above (their
  // /proc mounted before workernode's main runs:
  // ChildProcess.AForkThatRunsTheFunctionIsPidOneOfItsNamespace).
  req.own_pid_namespace = config_.own_pid_namespace;
  auto child = os::ChildProcess::spawn(req);
  if (!child) {
    LocalPods::remove_tmp(pod);
    return make_error("cannot start local worker " + name + ": " + child.error());
  }
  return std::make_unique<os::ChildProcess>(std::move(child).value());
}

Status LocalPods::start() {
  auto gate = os::StartGate::make(config_.pod_names.size());
  if (!gate) return Error{gate.error()};
  gate_ = std::move(gate).value();
  for (size_t i = 0; i < config_.pod_names.size(); ++i) {
    Pod pod{config_.pod_names[i], static_cast<int>(i), nullptr, {}, 1, {}};
    auto child = spawn(pod, 1, gate_->pod_end(i));
    if (!child) {
      for (auto& p : pods_) {
        p.process->signal(SIGKILL);
        p.process->wait();
        remove_tmp(p);
      }
      pods_.clear();
      return Error{child.error()};
    }
    pod.process = std::move(child).value();
    pods_.push_back(std::move(pod));
  }
  gate_->close_pod_ends();
  // The first pods were spawned by this thread (main, which outlives them);
  // the watcher spawns the recreated ones and reaps them all before it ends.
  watcher_ = std::thread([this] { watch(); });
  return Ok{};
}

std::vector<int> LocalPods::open_gate() {
  if (!gate_) return {};
  gate_->open();
  gate_opened_ = true;
  return gate_->take_lines();
}

void LocalPods::watch() {
  auto log = component_logger("headnode");
  while (!stopping_.load()) {
    auto now = std::chrono::steady_clock::now();
    for (auto& pod : pods_) {
      if (pod.process) {
        auto status = pod.process->try_wait();
        if (!status) continue;
        pod.process.reset();
        remove_tmp(pod);
        if (config_.ending->load() || stopping_.load()) continue;
        if (status->signal == 0 && status->code == kNodeExitRejected) {
          // The head refused it: starting it again would be refused again.
          log->error("local worker {} was refused by the head; not recreating it", pod.name);
          continue;
        }
        log->warn("local worker {} exited ({}); recreating it in {}", pod.name, status->describe(),
                  format_duration(config_.restart_delay));
        pod.restart_at = now + config_.restart_delay;
        pod.starts = -pod.starts;  // negative: a restart is due
      } else if (pod.starts < 0 && now >= pod.restart_at && !config_.ending->load()) {
        auto child = spawn(pod, -pod.starts + 1);
        if (!child) {
          log->error("{}", child.error());
          pod.restart_at = now + std::chrono::seconds(1);
          continue;
        }
        pod.process = std::move(child).value();
        pod.starts = -pod.starts + 1;
      }
    }
    std::unique_lock<std::mutex> lock(wake_mu_);
    wake_.wait_for(lock, kPoll, [this] { return stopping_.load(); });
  }
  reap_all();
}

void LocalPods::reap_all() {
  for (auto& pod : pods_) {
    if (!pod.process) continue;
    // The pod's exit wakes the pidfd (no polling delay at every job's end);
    // without one, short sleeps.
    while (!pod.process->try_wait()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline_ - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      if (pod.process->pidfd() >= 0) {
        pollfd p{pod.process->pidfd(), POLLIN, 0};
        ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    if (!pod.process->reaped()) {
      component_logger("headnode")
          ->warn("local worker {} (pid {}) did not exit: killing it", pod.name, pod.process->pid());
      pod.process->signal(SIGKILL);
      pod.process->wait();
    }
    remove_tmp(pod);
  }
}

void LocalPods::stop_and_reap(std::chrono::milliseconds timeout) {
  deadline_ = std::chrono::steady_clock::now() + timeout;
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stopping_.store(true);
  }
  wake_.notify_all();
  // The watcher reaps before it ends: the pods it spawned die with its thread.
  if (watcher_.joinable()) watcher_.join();
}

}  // namespace atl::headnode
