// User code on the JobSupervisor: its plan for the active pods, an attempt's
// start (the head's own executors spawned, each pod sent its launches), its
// stop, and the reports of its processes. What a plan holds and what an end
// means are UserCode's (atl/supervisor/user_code.hpp); this file performs them.
#include <algorithm>
#include <cstdlib>

#include "atl/actors/executor.hpp"
#include "atl/os/child_process.hpp"
#include "atl/os/machine.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

// WORLD_SIZE/RANK of a ray- or driver-mode process: the job's pods, the
// head first (0), then the active workers in their order (1..N).
// Seed 002's MASTER_ADDR for what is not a rank: the head pod's name where
// it resolves to the head (e.g. jo-xxxx-head-0), else its address.
const std::string& master_of(const State& st) {
  return st.config.head_dns_name.empty() ? st.config.advertised_host : st.config.head_dns_name;
}

ProcessSite head_site(const State& st) {
  return {head_pod_name(st.job().job_id), os::interface_of_address(st.config.advertised_host),
          master_of(st), 0, static_cast<int>(st.active().size()) + 1};
}

namespace {

// `pod`'s site when its index among the active pods is known (-1: none).
ProcessSite site_at(const State& st, const std::string& pod, int active_index) {
  const NodeInfo* info = st.pods.registry().info(pod);
  return {pod, info ? info->interface : std::string(), master_of(st),
          active_index < 0 ? -1 : active_index + 1, static_cast<int>(st.active().size()) + 1};
}

}  // namespace

ProcessSite pod_site(const State& st, const std::string& pod) {
  const auto& active = st.active();
  const auto at = std::find(active.begin(), active.end(), pod);
  return site_at(st, pod, at == active.end() ? -1 : static_cast<int>(at - active.begin()));
}

// Every stream's launch for the active pods: at each (re)start, since a
// recreated pod may have a new address. False when the job failed instead.
bool plan_user_code(Actor* self) {
  auto& st = self->state;
  PlanInput in;
  in.job = &st.job();
  in.atl = AtlEndpoint{st.address, st.job().job_id};
  in.head_host = st.config.advertised_host;
  in.head_pod = head_pod_name(st.job().job_id);
  in.head_site = head_site(st);
  in.restarts_used = st.controller.restarts().used();
  if (!st.controller.restarts().history().empty())
    in.last_exit_reason = st.controller.restarts().history().back().detail;
  in.ray_bin = st.config.ray_bin;
  in.ray_python = st.config.ray_python;
  in.ray_token = st.config.ray_token;
  in.ray_ready_wait = std::chrono::duration_cast<std::chrono::seconds>(st.job().ray_ready_timeout);
  if (st.job().mode != JobMode::driver) {
    // The plan walks the active pods in order: each one's index is known
    // (pod_site's search, per pod, was quadratic at thousands of pods).
    const auto& active = st.active();
    for (std::size_t i = 0; i < active.size(); ++i) {
      const std::string& pod = active[i];
      const NodeInfo* info = st.pods.registry().info(pod);
      if (!info) {  // lost between the checks and now
        st.controller.fail(JobEvent::node_lost,
                           "pod " + pod + " was lost before its ranks started");
        return false;
      }
      in.active.push_back({*info, site_at(st, pod, static_cast<int>(i))});
    }
  }
  if (auto planned = st.code.plan(in); !planned) {
    st.controller.fail(JobEvent::rank_failed, planned.error());
    return false;
  }
  return true;
}

int streams_per_pod(const State& st) {
  return st.job().mode == JobMode::spmd ? st.job().nproc_per_node : 1;
}

std::string pod_of_rank(const State& st, std::int32_t stream) {
  if (stream < 0) return head_pod_name(st.job().job_id);  // the driver, Ray's head
  const auto& rank_pods = st.code.rank_pods();
  if (!rank_pods.empty())
    return static_cast<size_t>(stream) < rank_pods.size() ? rank_pods[stream] : "";
  auto node = static_cast<size_t>(stream / streams_per_pod(st));
  return node < st.active().size() ? st.active()[node] : std::string();
}

void launch_user_code(Actor* self, LaunchScope scope) {
  auto& st = self->state;
  const std::int32_t attempt = st.code.attempt();
  clear_groups(self, "user code started again (attempt " + std::to_string(attempt) + ")");
  // Each attempt's output in files of its own (before any line of it).
  self->send(st.config.sink, attempt_atom::value, attempt);
  auto launches = st.code.begin(scope);
  st.controller.persist();
  for (auto& launch : launches.on_head) {
    // The head pod's own processes: the driver (and in ray mode Ray's head).
    const bool driver = launch.stream.kind == StreamKind::driver;
    // The driver's $TORCHELASTIC_ERROR_FILE, as a rank's: its exception (or
    // in ray mode the readiness wait's line naming the pods Ray never saw)
    // is the reason the job's end gives.
    std::shared_ptr<ProcessMeter> meter;
    if (driver) {
      meter = std::make_shared<ProcessMeter>();
      const char* tmp = std::getenv("TMPDIR");
      meter->error_file = std::string(tmp && *tmp ? tmp : "/tmp") + "/atl-error-" +
                          pod_of_rank(st, -1) + "-driver-" + std::to_string(attempt) + ".json";
    }
    caf::actor exec =
        spawn_executor(self->system(), std::move(launch), pod_of_rank(st, -1), st.config.sink,
                       caf::actor_cast<caf::actor>(self), nullptr, std::move(meter));
    self->monitor(exec);  // an executor that dies is its process's failure
    (driver ? st.driver : st.ray_head) = exec;
  }
  if (!launches.by_pod.empty())
    st.log->info("launching {} ranks on {} pods (attempt {})", st.code.ranks().size(),
                 launches.by_pod.size(), attempt);
  for (auto& [pod, batch] : launches.by_pod) {
    const JoinedPod* node = st.pods.registry().find(pod);
    if (!node) continue;  // lost meanwhile: the loss fails the job
    self->send(node->agent, launch_atom::value, std::move(batch), st.config.sink);
  }
}

void stop_user_code(Actor* self) {
  auto& st = self->state;
  auto grace = static_cast<std::int64_t>(st.job().grace.count());
  for (const auto& [pod, node] : st.pods.registry().joined_pods())
    self->send(node.agent, stop_atom::value, grace);
  if (st.driver) self->send(st.driver, stop_atom::value, grace);
  if (st.ray_head) self->send(st.ray_head, stop_atom::value, grace);
}

void on_process_started(Actor* self, const ProcessStarted& started) {
  auto& st = self->state;
  switch (started.stream.kind) {
    case StreamKind::task:
      on_task_started(self, started, started.stream.run);
      return;
    case StreamKind::run:
      on_debug_started(self, started, started.stream);
      return;
    default:
      break;
  }
  auto key = user_code_key(started.stream);
  if (key && st.code.started(*key, started.attempt, started.pid)) on_user_code_progress(self);
}

void on_process_exit(Actor* self, const ProcessExit& exit) {
  auto& st = self->state;
  switch (exit.stream.kind) {
    case StreamKind::task:
      on_task_exit(self, exit, exit.stream.run);
      return;
    case StreamKind::run:
      on_debug_exit(self, exit, exit.stream);
      return;
    default:
      break;
  }
  auto user_key = user_code_key(exit.stream);
  if (!user_key || !st.code.ended(*user_key, exit)) return;
  const std::int32_t key = *user_key;
  // A driver's placement groups are its own (Ray: the job's): they go with it.
  if (key == kDriverStream && st.job().mode == JobMode::driver)
    clear_groups(self, "the driver ended");
  ExitMeaning meaning;  // what the end means is asked only while user code runs
  if (st.state() == JobState::command) meaning = st.code.meaning(st.job().mode, key, exit);
  if (st.controller.on_user_code_ended(meaning)) return;
  // Parked in a debug state: stopped by atlctl, no failure; maybe a stop to answer.
  if (st.job().mode == JobMode::ray && key != kDriverStream)
    on_ray_node_gone_while_parked(
        self, (key == kRayHeadStream ? "Ray's head on pod " : "Ray on pod ") + exit.pod + " " +
                  (exit.error.empty() ? os::ExitStatus{exit.code, exit.signal}.ended()
                                      : "could not start: " + exit.error));
  on_user_code_progress(self);
}

void on_ray_node_gone_while_parked(Actor* self, const std::string& why) {
  auto& st = self->state;
  if (!st.code.ray_cluster_to_tear_down()) return;  // nothing left running, or already said
  std::string line = why +
                     " while the job was stopped: the rest of the Ray cluster is stopped; "
                     "recover starts Ray and the driver again";
  st.log->warn("{}", line);
  st.controller.record("fault", line);
  self->send(st.config.sink, print_atom::value, line);
  stop_user_code(self);
}

}  // namespace atl::supervisor
