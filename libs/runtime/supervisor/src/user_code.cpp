#include "atl/supervisor/user_code.hpp"

#include <utility>

#include "atl/core/resources.hpp"
#include "atl/os/child_process.hpp"

namespace atl::supervisor {

std::string user_code_label(std::int32_t key) {
  return key == kDriverStream ? "the driver" : "rank " + std::to_string(key);
}

ProcessLaunch debug_launch_from(const ProcessLaunch& own) {
  ProcessLaunch launch;
  launch.stream = own.stream;
  launch.env = own.env;
  launch.working_dir = own.working_dir;
  return launch;
}

namespace {

// Token authentication on every Ray process, with the job's own token: set
// after the user's variables (a job cannot turn it off by accident), and
// ahead of any token file (a stray ~/.ray/auth_token changes nothing).
void with_ray_auth(const PlanInput& in, EnvMap& env) {
  if (in.ray_token.empty()) return;
  env["RAY_AUTH_MODE"] = "token";
  env["RAY_AUTH_TOKEN"] = in.ray_token;
}

// The stop warning (--stop-signal) for a process of user code.
void with_stop_warning(const JobSpec& job, ProcessLaunch& launch) {
  launch.warn_signal = job.stop_warning.signal;
  launch.warn_ms = job.stop_warning.signal ? job.stop_warning.lead.count() : 0;
}

// Why the last attempt ended, for every process of a restarted one: one
// line, bounded (an environment is no log).
void with_last_exit(const PlanInput& in, EnvMap& env) {
  if (in.last_exit_reason.empty()) return;
  std::string reason = in.last_exit_reason.substr(0, 1024);
  for (char& c : reason)
    if (c == '\n' || c == '\r') c = ' ';
  env["ATL_LAST_EXIT_REASON"] = reason;
}

}  // namespace

// Ray mode: `ray start --head` on the head pod, `ray start --address` on each
// active worker pod (its "rank", stream = node rank), and the entrypoint as
// the driver once Ray's API sees every node.
Status UserCode::plan_ray(const PlanInput& in) {
  const JobSpec& job = *in.job;
  const std::string restarts = std::to_string(in.restarts_used);
  // Where Ray's head listens (one host: not 127.0.0.1, which Ray replaces).
  const std::string ray_head = ray_node_host(in.head_host);
  ProcessSite head_site = in.head_site;
  head_site.master_addr = ray_head;  // Ray's address is its head's node address
  std::vector<RayPod> workers;
  for (const auto& pod : in.active) workers.push_back({pod.info.pod, pod.info.address});
  // Nodes sharing an address could never all be alive in Ray: said now.
  if (auto distinct = ray_addresses_distinct(ray_head, workers); !distinct) return distinct;
  for (size_t k = 0; k < in.active.size(); ++k) {
    const NodeInfo& info = in.active[k].info;
    const auto stream = static_cast<std::int32_t>(k);
    ProcessLaunch launch;
    launch.stream = StreamId::of_rank(stream);
    launch.command = ray_worker_command(job, in.ray_bin, in.ray_python, ray_head, info.address,
                                        in.ray_ready_wait, static_cast<int>(k));
    launch.scratch_dir = ray_temp_dir(job.job_id, "w" + std::to_string(k), job.ray_port);
    launch.stop_at_once = true;
    EnvMap env = build_process_env(job, in.atl, in.active[k].site);
    env["ATL_RESTART_COUNT"] = restarts;
    // Its Ray (the command names it too): for `ray status` in the pod's shells.
    env["RAY_ADDRESS"] = ray_head + ":" + std::to_string(job.ray_port);
    with_last_exit(in, env);
    with_ray_auth(in, env);
    launch.env = to_env_strings(env);
    launches_[stream] = std::move(launch);
    pod_of_[stream] = info.pod;
  }
  ProcessLaunch head;
  head.stream = StreamId::ray_head();
  head.command = ray_head_command(job, in.ray_bin, ray_head);
  head.scratch_dir = ray_temp_dir(job.job_id, "h", job.ray_port);
  head.stop_at_once = true;
  EnvMap head_env = build_process_env(job, in.atl, head_site);
  with_ray_auth(in, head_env);
  head.env = to_env_strings(head_env);
  launches_[kRayHeadStream] = std::move(head);
  pod_of_[kRayHeadStream] = in.head_pod;
  ProcessLaunch driver;
  driver.stream = StreamId::driver();
  driver.command = ray_driver_command(job, in.ray_python, ray_head, workers, in.ray_ready_wait);
  EnvMap env = ray_driver_env(job, in.atl, head_site);
  env["ATL_RESTART_COUNT"] = restarts;
  with_last_exit(in, env);
  with_ray_auth(in, env);
  driver.env = to_env_strings(env);
  with_stop_warning(job, driver);
  launches_[kDriverStream] = std::move(driver);
  pod_of_[kDriverStream] = in.head_pod;
  return Ok{};
}

Status UserCode::plan(const PlanInput& in) {
  const JobSpec& job = *in.job;
  const std::string restarts = std::to_string(in.restarts_used);
  if (job.mode == JobMode::spmd) {
    // Placed first: a plan that does not fit changes nothing.
    std::vector<NodeSlot> slots;
    for (const auto& pod : in.active) {
      const NodeInfo& info = pod.info;
      slots.push_back(
          NodeSlot{info.pod, info.address, info.interface, info.gpus,
                   node_resources(info.cpus, info.gpus, info.memory, info.shm, info.resources),
                   info.dns_name});
    }
    auto layout = job.placement ? place_ranks(slots, job.nproc_per_node, *job.placement)
                                : layout_ranks(slots, job.nproc_per_node);
    if (!layout) return make_error("cannot place ranks: " + layout.error());
    launches_.clear();
    pod_of_.clear();
    rank_pods_.assign(layout->size(), std::string());
    const int groups = group_count(*layout);
    for (const auto& placement : *layout) {
      const std::string& pod = slots[placement.slot].pod;
      rank_pods_[placement.rank] = pod;
      ProcessLaunch launch;
      launch.stream = StreamId::of_rank(placement.rank);
      launch.command = job.entrypoint;
      EnvMap env = build_rank_env(job, slots, *layout, placement, in.atl, in.restarts_used, groups);
      with_last_exit(in, env);
      // Its node turns torch's flight recorder on for the hang diagnosis
      // (os/flight_recorder.hpp), unless the job says ATL_FLIGHT_RECORDER=0.
      env.emplace("ATL_FLIGHT_RECORDER", "1");
      launch.env = to_env_strings(env);
      launch.working_dir = job.working_dir;
      with_stop_warning(job, launch);
      launches_[placement.rank] = std::move(launch);
      pod_of_[placement.rank] = pod;
    }
    return Ok{};
  }
  launches_.clear();
  pod_of_.clear();
  rank_pods_.clear();
  if (job.mode == JobMode::ray) return plan_ray(in);
  ProcessLaunch launch;
  launch.stream = StreamId::driver();
  launch.command = job.entrypoint;
  EnvMap env = build_process_env(job, in.atl, in.head_site);
  env["ATL_RESTART_COUNT"] = restarts;
  with_last_exit(in, env);
  launch.env = to_env_strings(env);
  launch.working_dir = job.working_dir;
  with_stop_warning(job, launch);
  launches_[kDriverStream] = std::move(launch);
  pod_of_[kDriverStream] = in.head_pod;
  return Ok{};
}

AttemptLaunches UserCode::begin(LaunchScope scope) {
  const bool driver_only = scope == LaunchScope::driver_only;
  if (!driver_only) {
    ranks_.clear();
    by_pod_.clear();
    ray_torn_down_ = false;
  }
  AttemptLaunches out;
  for (const auto& [stream, planned] : launches_) {
    if (driver_only && stream != kDriverStream) continue;
    ProcessLaunch launch = planned;
    launch.attempt = attempt_;
    const std::string& pod = pod_of_[stream];
    ranks_.add(stream, pod, attempt_);
    by_pod_[pod].push_back(stream);
    if (stream < 0) {
      out.on_head.push_back(std::move(launch));
    } else {
      out.by_pod[pod].push_back(std::move(launch));
    }
  }
  return out;
}

bool UserCode::started(std::int32_t key, std::int32_t attempt, std::int32_t pid) {
  auto it = ranks_.find(key);
  if (it == ranks_.end() || attempt != it->second.attempt) return false;
  ranks_.mark_started(key, pid);
  return true;
}

bool UserCode::ended(std::int32_t key, const ProcessExit& exit) {
  auto it = ranks_.find(key);
  // Reports of an earlier attempt (before a recover) are history.
  if (it == ranks_.end() || exit.attempt != it->second.attempt) return false;
  return ranks_.mark_done(key, exit.code, exit.signal, exit.error);
}

void UserCode::pod_lost(const std::string& pod) {
  // Through the per-pod index: a loss costs that pod's ranks, not the job's
  // (a walk over every rank made a batch of lost pods stall the supervisor).
  auto idx = by_pod_.find(pod);
  if (idx == by_pod_.end()) return;
  for (std::int32_t stream : idx->second) {
    auto r = ranks_.find(stream);
    if (r != ranks_.end() && r->second.pod == pod) ranks_.mark_done(stream, 0, 0, "pod lost");
  }
}

RayProcesses UserCode::ray_processes() const {
  RayProcesses p;
  for (const auto& [stream, r] : ranks_) {
    if (stream == kDriverStream) {
      p.driver_ended = r.done;
    } else {
      (r.done ? p.nodes_ended : p.nodes_up) += 1;
    }
  }
  if (!ranks_.count(kDriverStream)) p.driver_ended = true;
  return p;
}

bool UserCode::ray_cluster_to_tear_down() {
  if (!ray_cluster_broken(ray_processes()) || ray_torn_down_) return false;
  ray_torn_down_ = true;
  return true;
}

ExitMeaning UserCode::meaning(JobMode mode, std::int32_t key, const ProcessExit& exit) const {
  const os::ExitStatus status{exit.code, exit.signal};
  std::string how = exit.error.empty() ? status.ended() : "could not start: " + exit.error;
  if (!exit.reason.empty()) how += ": " + exit.reason;  // its own word (TORCHELASTIC_ERROR_FILE)
  auto fault = [&](FaultKind kind, std::string detail) {
    ExitMeaning m;
    m.kind = ExitMeaning::Kind::fault;
    m.fault = Fault{kind, exit.pod, std::move(detail)};
    return m;
  };
  if (mode == JobMode::ray) {
    // The driver decides the job; a Ray node that ends before it is its
    // pod's fault (the whole cluster restarts, within the budget).
    if (key == kDriverStream) {
      if (exit.error.empty() && status.success()) return {ExitMeaning::Kind::succeeded, {}};
      if (exit.error.empty() && status.signal == 0 && status.code == kRayNotReadyExit)
        // Ray's nodes that never joined are a ready timeout like pods that
        // never came: retried within the budget.
        // Its error file's line names the pods that never came up in Ray.
        return fault(FaultKind::ready_timeout,
                     exit.reason.empty() ? "the Ray cluster did not become ready (the driver's "
                                           "log names the pods not alive in Ray)"
                                         : exit.reason);
      return fault(FaultKind::rank_failed, "the Ray driver " + how);
    }
    const std::string who =
        key == kRayHeadStream ? "Ray's head on pod " + exit.pod : "Ray on pod " + exit.pod;
    return fault(FaultKind::pod_lost, who + " " + how);
  }
  // A failure, or with restart_on_failure a fault (the policy decides).
  if (!exit.error.empty() || !status.success())
    return fault(FaultKind::rank_failed, user_code_label(key) + " on pod " + exit.pod + " " + how);
  if (ranks_.all_done()) return {ExitMeaning::Kind::succeeded, {}};
  return {};
}

}  // namespace atl::supervisor
