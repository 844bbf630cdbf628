#include "atl/actors/job_supervisor.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/executor.hpp"
#include "atl/core/quote.hpp"
#include "atl/core/rank_layout.hpp"
#include "atl/core/ray_cluster.hpp"
#include "atl/core/split.hpp"
#include "atl/core/status_page.hpp"
#include "atl/os/child_process.hpp"
#include "atl/os/job_store.hpp"
#include "atl/os/machine.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr auto kShutdownTimeout = std::chrono::seconds(10);
// How often expiries are looked for: a silent node is declared lost at most
// this long after its timeout.
constexpr auto kLivenessTick = std::chrono::milliseconds(100);
// A restart whose pre-flight failed tries again after this pause.
constexpr auto kRetryPause = std::chrono::seconds(1);
constexpr size_t kMaxEvents = 10000;

}  // namespace

bool apply(Actor* self, JobEvent event) {
  auto& st = self->state;
  JobState before = st.state();
  auto next = st.lifecycle.apply(event);
  if (!next) {
    st.log->debug("ignored: {}", next.error());
    return false;
  }
  if (*next != before) {
    st.log->info("job {}: {} -> {}", st.job().job_id, to_string(before), to_string(*next));
    record(self, "state", std::string(to_string(before)) + " -> " + std::string(to_string(*next)));
    persist(self);
  }
  return true;
}

namespace {

void store_failed(Actor* self, const std::string& why) {
  auto& st = self->state;
  if (st.store_failed) return;
  st.store_failed = true;  // once: the job goes on, its durable record is behind
  st.log->error(
      "the job's durable state cannot be written (a head restart would not resume "
      "it): {}",
      why);
}

}  // namespace

void persist(Actor* self) {
  auto& st = self->state;
  if (!st.journal) return;
  os::JobRecord r;
  r.state = std::string(to_string(st.state()));
  r.attempt = st.code.attempt();
  r.restarts = st.restarts.used();
  r.faults = st.restarts.history();
  r.taints = st.taints.all();
  st.journal->save(std::move(r));  // written on the journal's thread, never here
}

std::int64_t unix_ms_now() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
}

void record(Actor* self, const std::string& kind, const std::string& text) {
  auto& events = self->state.events;
  events.push_back({unix_ms_now(), kind, text});
  if (self->state.journal) self->state.journal->add_event({events.back().unix_ms, kind, text});
  if (events.size() > kMaxEvents) events.pop_front();  // a bounded ring: all of it is in SQLite
}

namespace {

void finalize(Actor* self);
void on_fault(Actor* self, const Fault& fault);
void maybe_relaunch(Actor* self);

// --- command -----------------------------------------------------------------

}  // namespace

// Every worker pod as choose_active sees it: index, node, joined or not.
std::vector<PodView> pod_views(const State& st) {
  std::vector<PodView> pods;
  const auto& expected = st.pods.expected();
  for (size_t i = 0; i < expected.size(); ++i) {
    const NodeInfo* info = st.pods.info(expected[i]);
    pods.push_back(
        {expected[i], static_cast<int>(i), info ? info->machine : std::string(), info != nullptr});
  }
  return pods;
}

Status select_active(Actor* self) {
  auto& st = self->state;
  auto choice = choose_active(pod_views(st), st.job().workers, st.taints);
  if (!choice) return Error{choice.error()};
  if (choice->active != st.active) {
    std::string list;
    for (const auto& p : choice->active) list += (list.empty() ? "" : ", ") + p;
    st.log->info("active pods: {}", list);
  }
  st.active = std::move(choice->active);
  return Ok{};
}

void taint_platform(Actor* self, const std::string& pod, const std::string& reason) {
  auto& st = self->state;
  const std::string* machine = st.pods.machine_of(pod);
  if (!machine || st.taints.tainted(*machine)) return;
  st.taints.mark(*machine, reason, unix_ms_now());
  persist(self);
  std::string line = "node " + *machine + " tainted by the platform: " + reason;
  st.log->warn("{}", line);
  record(self, "taint", line);
}

ProcessSite head_site(const State& st) {
  return {head_pod_name(st.job().job_id), os::interface_of_address(st.config.advertised_host),
          st.config.advertised_host};
}

ProcessSite pod_site(const State& st, const std::string& pod) {
  const NodeInfo* info = st.pods.info(pod);
  return {pod, info ? info->interface : std::string(), st.config.advertised_host};
}

// How long Ray's nodes and the driver wait for the cluster to come up.
constexpr auto kRayReadyWait = std::chrono::seconds(120);

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
  in.restarts_used = st.restarts.used();
  in.ray_bin = st.config.ray_bin;
  in.ray_python = st.config.ray_python;
  in.ray_ready_wait = kRayReadyWait;
  if (st.job().mode != JobMode::driver) {
    for (const auto& pod : st.active) {
      const NodeInfo* info = st.pods.info(pod);
      if (!info) {  // lost between the checks and now
        fail(self, JobEvent::node_lost, "pod " + pod + " was lost before its ranks started");
        return false;
      }
      in.active.push_back({*info, pod_site(st, pod)});
    }
  }
  if (auto planned = st.code.plan(in); !planned) {
    fail(self, JobEvent::rank_failed, planned.error());
    return false;
  }
  return true;
}

namespace {

// initializing -> command, or restarting -> command: user code starts from scratch.
void start_command(Actor* self) {
  auto& st = self->state;
  bool restart = st.state() == JobState::restarting;
  if (!apply(self, JobEvent::checks_passed)) return;
  if (restart) {
    st.code.next_attempt();
    std::string line = "job restarted: attempt " + std::to_string(st.code.attempt()) +
                       " (restart " + std::to_string(st.restarts.used()) + "/" +
                       std::to_string(st.restarts.budget()) + ")";
    record(self, "restart", line);
    self->send(st.config.sink, print_atom::value, line);
  }
  if (plan_user_code(self)) launch_user_code(self);
}

}  // namespace

int streams_per_pod(const State& st) {
  return st.job().mode == JobMode::spmd ? st.job().nproc_per_node : 1;
}

std::string pod_of_rank(const State& st, std::int32_t stream) {
  if (stream < 0) return head_pod_name(st.job().job_id);  // the driver, Ray's head
  const auto& rank_pods = st.code.rank_pods();
  if (!rank_pods.empty())
    return static_cast<size_t>(stream) < rank_pods.size() ? rank_pods[stream] : "";
  auto node = static_cast<size_t>(stream / streams_per_pod(st));
  return node < st.active.size() ? st.active[node] : std::string();
}

void launch_user_code(Actor* self, LaunchScope scope) {
  auto& st = self->state;
  const std::int32_t attempt = st.code.attempt();
  clear_groups(self, "user code started again (attempt " + std::to_string(attempt) + ")");
  // Each attempt's output in files of its own (before any line of it).
  self->send(st.config.sink, attempt_atom::value, attempt);
  auto launches = st.code.begin(scope);
  persist(self);
  for (auto& launch : launches.on_head) {
    // The head pod's own processes: the driver (and in ray mode Ray's head).
    const bool driver = launch.stream.kind == StreamKind::driver;
    caf::actor exec = spawn_executor(self->system(), std::move(launch), pod_of_rank(st, -1),
                                     st.config.sink, caf::actor_cast<caf::actor>(self));
    self->monitor(exec);  // an executor that dies is its process's failure
    (driver ? st.driver : st.ray_head) = exec;
  }
  if (!launches.by_pod.empty())
    st.log->info("launching {} ranks on {} pods (attempt {})", st.code.ranks().size(),
                 launches.by_pod.size(), attempt);
  for (auto& [pod, batch] : launches.by_pod) {
    const JoinedPod* node = st.pods.find(pod);
    if (!node) continue;  // lost meanwhile: the loss fails the job
    self->send(node->agent, launch_atom::value, std::move(batch), st.config.sink);
  }
}

// --- ending ------------------------------------------------------------------

void stop_user_code(Actor* self) {
  auto& st = self->state;
  auto grace = static_cast<std::int64_t>(st.job().grace.count());
  for (const auto& [pod, node] : st.pods.joined_pods())
    self->send(node.agent, stop_atom::value, grace);
  if (st.driver) self->send(st.driver, stop_atom::value, grace);
  if (st.ray_head) self->send(st.ray_head, stop_atom::value, grace);
}

void fail(Actor* self, JobEvent event, const std::string& reason) {
  auto& st = self->state;
  if (is_terminal(st.state()) || !apply(self, event)) return;
  st.failure = reason;
  st.log->error("job {} failed: {}", st.job().job_id, reason);
  if (st.code.ranks().all_done()) {
    finalize(self);
    return;
  }
  stop_user_code(self);
  self->delayed_send(self, st.job().grace + kStopSlack, timeout_atom::value,
                     static_cast<std::int32_t>(kFailStopTimer), std::int32_t{0});
}

namespace {

// Hands the outcome to headnode's main and ends the supervisor.
void release(Actor* self) {
  auto& st = self->state;
  if (st.released) return;
  st.released = true;
  answer_owed_replies(self, "the job ended (" + std::string(to_string(st.state())) +
                                ") before this command finished");
  // The durable record is complete before the head says how the job ended
  // (the one wait on the journal: a resumed head must find the final state).
  if (st.journal) st.journal->flush();
  settle_outcome(*st.config.outcome, st.state() == JobState::succeeded ? 0 : 1);
  self->quit();
}

// The supervisor's state may be half-updated: do only what cannot make it
// worse. Say why, tell every worker to stop its ranks and leave, answer every
// waiting atlctl, hand over "failed". headnode then exits 1.
caf::error on_exception(Actor* self, const std::exception_ptr& e) {
  auto& st = self->state;
  std::string reason = "internal error in the supervisor: " + describe_exception(e);
  st.log->critical("job {} failed: {}", st.job().job_id, reason);
  st.config.ending->store(true);
  if (!is_terminal(st.state())) {
    apply(self, JobEvent::head_failed);
    st.failure = reason;
  }
  self->send(st.config.sink, print_atom::value, "job failed: " + reason);
  self->send(st.config.sink, print_atom::value, std::string("Job status:  failed"));
  for (const auto& [pod, node] : st.pods.joined_pods())
    self->send(node.agent, shutdown_atom::value, std::int32_t{1});
  if (st.driver) self->send(st.driver, stop_atom::value, std::int64_t{st.job().grace.count()});
  answer_owed_replies(self, "the supervisor failed: " + reason);
  st.released = true;
  settle_outcome(*st.config.outcome, 1);
  return caf::exit_reason::unhandled_exception;
}

void deliver_outcome(Actor* self) {
  auto& st = self->state;
  if (st.finished) return;
  st.finished = true;
  if (st.config.linger.count() > 0 && !st.cancelled) {
    self->delayed_send(self, st.config.linger, timeout_atom::value,
                       static_cast<std::int32_t>(kLingerTimer), std::int32_t{0});
    return;
  }
  release(self);
}

// Tells every worker how the job ended and waits (bounded) for them to leave.
void finalize(Actor* self) {
  auto& st = self->state;
  if (st.finalizing) return;
  st.finalizing = true;
  clear_groups(self, "the job ended");
  st.code.end_remaining("abandoned");
  st.config.ending->store(true);
  bool ok = st.state() == JobState::succeeded;
  if (!ok) {
    self->send(st.config.sink, print_atom::value, "job failed: " + st.failure);
    // One line per attempt a fault ended, with its reason.
    for (const auto& line : st.restarts.attempt_lines())
      self->send(st.config.sink, print_atom::value, "  " + line);
  }
  self->send(st.config.sink, print_atom::value,
             "Job status:  " + std::string(to_string(st.state())));
  st.log->info("job {} {}", st.job().job_id, to_string(st.state()));
  for (const auto& [pod, node] : st.pods.joined_pods()) {
    self->send(node.agent, shutdown_atom::value, static_cast<std::int32_t>(ok ? 0 : 1));
    st.agents_leaving.insert(node.agent.address());
  }
  if (st.agents_leaving.empty()) {
    deliver_outcome(self);
    return;
  }
  self->delayed_send(self, kShutdownTimeout, timeout_atom::value,
                     static_cast<std::int32_t>(kShutdownTimer), std::int32_t{0});
}

void on_rank_started(Actor* self, const RankStarted& started) {
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

void on_rank_exit(Actor* self, const RankExit& exit) {
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
  if (st.state() == JobState::command) {
    ExitMeaning meaning = st.code.meaning(st.job().mode, key, exit);
    if (meaning.kind == ExitMeaning::Kind::fault) {
      on_fault(self, meaning.fault);
    } else if (meaning.kind == ExitMeaning::Kind::succeeded &&
               apply(self, JobEvent::ranks_succeeded)) {
      // Ray mode: the driver decided; Ray's processes everywhere are stopped
      // and the job ends once they are.
      if (st.job().mode == JobMode::ray) stop_user_code(self);
      if (st.code.ranks().all_done()) finalize(self);
    }
  } else if (is_terminal(st.state())) {
    if (st.code.ranks().all_done()) finalize(self);
  } else if (st.state() == JobState::restarting) {
    maybe_relaunch(self);  // the faulted attempt's ranks are stopping
  } else {
    if (st.job().mode == JobMode::ray && key != kDriverStream)
      on_ray_node_gone_while_parked(
          self, (key == kRayHeadStream ? "Ray's head on pod " : "Ray on pod ") + exit.pod + " " +
                    (exit.error.empty() ? os::ExitStatus{exit.code, exit.signal}.ended()
                                        : "could not start: " + exit.error));
    on_user_code_progress(self);  // stopped by atlctl: no failure, maybe a stop to answer
  }
}

}  // namespace

void on_ray_node_gone_while_parked(Actor* self, const std::string& why) {
  auto& st = self->state;
  if (!st.code.ray_cluster_to_tear_down()) return;  // nothing left running, or already said
  std::string line = why +
                     " while the job was stopped: the rest of the Ray cluster is stopped; "
                     "recover starts Ray and the driver again";
  st.log->warn("{}", line);
  record(self, "fault", line);
  self->send(st.config.sink, print_atom::value, line);
  stop_user_code(self);
}

namespace {

// --- joining and checks --------------------------------------------------------

// A pre-flight round's verdict: user code starts, or the pod to blame is
// tainted and the fault takes its course.
}  // namespace

void on_preflight_verdict(Actor* self, const Preflight::Verdict& verdict) {
  auto& st = self->state;
  const std::string& pod = verdict.pod;
  const std::string& problem = verdict.problem;
  // A node that fails the pre-flight gets a platform taint: the next attempt
  // (or a spare) avoids it.
  if (!problem.empty()) taint_platform(self, pod, "failed the pre-flight: " + problem);
  if (st.state() == JobState::initializing) {
    if (problem.empty()) {
      start_command(self);
    } else if (!st.pods.machine_of(pod) || !select_active(self)) {
      // Nothing can take the failed node's place: say so now, not after the
      // ready timeout.
      fail(self, JobEvent::check_failed, problem);
    } else {
      on_fault(self, {FaultKind::preflight_failed, pod, problem});
    }
  } else if (st.state() == JobState::restarting) {
    if (problem.empty()) {
      start_command(self);
    } else {
      on_fault(self, {FaultKind::preflight_failed, pod, problem});
    }
  }
}

namespace {

void run_checks(Actor* self) {
  if (!apply(self, JobEvent::all_joined)) return;
  if (auto chosen = select_active(self); !chosen) {
    fail(self, JobEvent::check_failed, "cannot start: " + chosen.error());
    return;
  }
  preflight(self);
}

// Why the pod may not join (a retry: its old self is about to be declared
// lost), or nullopt when it joined.
std::optional<Refusal> register_node(Actor* self, const NodeInfo& info, const caf::actor& agent) {
  auto& st = self->state;
  // Pods join before the job starts, and a lost or deleted pod rejoins (as
  // Kubernetes recreates it) while the job restarts or is parked in debug.
  // Spares may join at any time until the job ends.
  const JobState state = st.state();
  Pods::JoinRules rules;
  if (is_terminal(state) || st.finalizing)
    rules.closed = "job " + st.job().job_id + " is in state " + std::string(to_string(state)) +
                   " and takes no new workers";
  rules.gpus_required = st.job().node_spec.gpus;
  bool rejoined = false;
  if (auto refused = st.pods.join(info, agent, rules, &rejoined)) return refused;
  self->monitor(agent);
  refresh_placement(self);  // groups waiting for resources may fit now
  st.liveness.watch(info.pod, std::chrono::steady_clock::now());
  st.log->info("pod {} {} from {} on node {} ({} cpus, {} gpus) [{}/{}]", info.pod,
               rejoined ? "rejoined" : "joined", info.address, info.machine, info.cpus, info.gpus,
               st.pods.joined_count(), st.pods.expected().size());
  if (state != JobState::pending)
    record(self, "pod", "pod " + info.pod + " rejoined from " + info.address);
  // After this reply is sent: the check request must not overtake it.
  if (state == JobState::restarting || st.pods.all_joined()) self->send(self, check_atom::value);
  return std::nullopt;
}

// --- faults and restarts -------------------------------------------------------

// Pre-flight and relaunch once the faulted attempt's ranks are all gone and
// every pod is back.
void maybe_relaunch(Actor* self) {
  auto& st = self->state;
  if (st.state() != JobState::restarting || st.preflight || st.retry_pending) return;
  if (!st.code.ranks().all_done()) return;
  // Enough pods on untainted nodes (spares included)? Else keep waiting.
  if (auto chosen = select_active(self); !chosen) {
    st.log->info("restart waits: {}", chosen.error());
    return;
  }
  preflight(self);
}

// `counted`: the fault used one restart of the budget (a delete while parked
// in a debug state uses none).
void begin_restart(Actor* self, const Fault& fault, bool counted) {
  auto& st = self->state;
  const JobState before = st.state();
  apply(self, JobEvent::restart);
  std::string line = counted
                         ? "job restarting (restart " + std::to_string(st.restarts.used()) + "/" +
                               std::to_string(st.restarts.budget()) + "): " + fault.detail
                         : "job restarting (from " + std::string(to_string(before)) +
                               ": no restart used, " + std::to_string(st.restarts.used()) + "/" +
                               std::to_string(st.restarts.budget()) + "): " + fault.detail;
  st.log->warn("{}", line);
  record(self, "restart", line);
  self->send(st.config.sink, print_atom::value, line);
  st.preflight.reset();  // a pre-flight under way is moot
  if (before == JobState::debugCommand && st.debug.tracked() != 0) {
    // The debug command that held the job ends with the attempt it parked.
    const RunId run = st.debug.release_tracked();
    auto grace = static_cast<std::int64_t>(st.job().grace.count());
    for (const auto& [pod, node] : st.pods.joined_pods())
      self->send(node.agent, stop_atom::value, StreamId::of_run(run, 0), grace);
  }
  const std::int32_t restart = ++st.restart_round;
  if (!st.code.ranks().all_done()) {
    stop_user_code(self);
    self->delayed_send(self, st.job().grace + kStopSlack, timeout_atom::value,
                       static_cast<std::int32_t>(kRestartStopTimer), restart);
  }
  // Pods must be back (and pass the pre-flight) within the ready timeout.
  self->delayed_send(self, st.job().ready_timeout, timeout_atom::value,
                     static_cast<std::int32_t>(kReadyTimer), restart);
  if (fault.kind == FaultKind::preflight_failed) {
    st.retry_pending = true;  // the same check at once would fail the same way
    self->delayed_send(self, kRetryPause, timeout_atom::value,
                       static_cast<std::int32_t>(kRestartRetryTimer), restart);
    return;
  }
  maybe_relaunch(self);
}

JobEvent failure_event(FaultKind kind) {
  switch (kind) {
    case FaultKind::preflight_failed:
      return JobEvent::check_failed;
    case FaultKind::rank_failed:
      return JobEvent::rank_failed;
    case FaultKind::ready_timeout:
      return JobEvent::ready_timeout;
    default:
      return JobEvent::node_lost;
  }
}

// Every fault goes through the RestartPolicy: restart, fail, or carry on.
void on_fault(Actor* self, const Fault& reported) {
  auto& st = self->state;
  Fault fault = reported;
  fault.attempt = st.code.attempt();  // the attempt it ends (status -v, logs/attempt-K)
  const size_t counted_before = st.restarts.history().size();
  const JobState state = st.state();
  switch (st.restarts.respond(state, fault)) {
    case FaultResponse::restart:
    case FaultResponse::restart_uncounted:
      record(self, "fault", fault.detail);
      begin_restart(self, fault, st.restarts.history().size() > counted_before);
      return;
    case FaultResponse::carry_on:
      if (state == JobState::command) {  // driver mode: the driver goes on
        record(self, "fault",
               fault.detail + " (driver mode: the driver goes on, the pod is awaited)");
        st.log->warn("{}: the driver goes on; the pod is awaited", fault.detail);
      } else if (!is_terminal(state)) {
        record(self, "fault",
               fault.detail + " (no restart in state " + std::string(to_string(state)) + ")");
        st.log->warn("{}: nothing to restart in state {}", fault.detail, to_string(state));
      }
      return;
    case FaultResponse::fail:
      break;
  }
  record(self, "fault", fault.detail);
  if (st.restarts.history().size() > counted_before) {
    fail(self, failure_event(fault.kind),
         fault.detail + "; the restart budget is spent (" + std::to_string(st.restarts.used()) +
             "/" + std::to_string(st.restarts.budget()) + " restarts used)");
  } else {
    fail(self, failure_event(fault.kind), fault.detail);
  }
}

// Pods did not all come (back) within the ready timeout: a fault like the
// others (seed 002: a clear error, then retried per the policy), in every
// mode. A retry waits for them again; a spent budget fails the job naming them.
void on_ready_timeout(Actor* self, const std::string& detail) {
  auto& st = self->state;
  st.log->warn("{}", detail);
  self->send(st.config.sink, print_atom::value, detail);
  on_fault(self, {FaultKind::ready_timeout, "", detail});
}

// Whether the job could still start with `node` tainted (the same choice
// select_active makes, on a copy of the taints).
bool spare_available(const State& st, const std::string& node) {
  TaintSet with_node = st.taints;
  with_node.mark(node, "", 0);
  return choose_active(pod_views(st), st.job().workers, with_node).ok();
}

// `pod` is gone (lost, silent or deleted): its ranks and debug runs end, and
// the fault takes its course. The pod may join again later, as a new process.
void lose_pod(Actor* self, const std::string& pod, const Fault& fault) {
  auto& st = self->state;
  // In pending it is just missing again; after the start it is awaited as lost.
  auto agent = st.pods.leave(pod, st.state() != JobState::pending);
  if (!agent) return;
  self->demonitor(*agent);
  st.liveness.forget(pod);
  on_pod_lost_tasks(self, pod);      // its tasks ended with it
  on_pod_lost_placement(self, pod);  // its bundles are placed again first
  // A spare (no ranks now) is simply awaited again; so is any pod before the start.
  bool active = std::find(st.active.begin(), st.active.end(), pod) != st.active.end();
  if (!active && st.state() != JobState::pending && !is_terminal(st.state())) {
    record(self, "pod", fault.detail + " (a spare: no restart)");
    st.log->warn("{} (a spare: no restart)", fault.detail);
    return;
  }
  if (active && fault.kind != FaultKind::pod_deleted && !is_terminal(st.state())) {
    // The same node lost twice in a row is not to be trusted again, when a
    // spare can take its place: a taint that leaves too few pods would stop
    // the job where the node might well have come back.
    const std::string* machine = st.pods.machine_of(pod);
    const std::string node = machine ? *machine : std::string();
    if (!node.empty() && node == st.last_lost_node) {
      if (spare_available(st, node)) {
        taint_platform(self, pod, "lost twice in a row (" + fault.detail + ")");
      } else {
        st.log->warn("node {} lost twice in a row; not tainted: no spare could take its place",
                     node);
      }
    }
    st.last_lost_node = node;
  }
  st.code.pod_lost(pod);  // its ranks, through a per-pod index (not a walk over the job's)
  // Debug commands on that pod end too (their waiters get an answer).
  for (const auto& [id, rank] : st.debug.running_on(pod)) {
    RankExit lost{StreamId::of_run(id, rank), id, pod, 255, 0, "pod lost"};
    on_debug_exit(self, lost, lost.stream);
  }
  // A pre-flight under way is moot: in restarting the pod is awaited and the
  // pre-flight reruns when it is back; in initializing the loss decides.
  st.preflight.reset();
  if (st.state() == JobState::pending) {
    st.log->warn("{} before the job started; waiting for it again", fault.detail);
    apply(self, JobEvent::node_lost);
  } else if (!is_terminal(st.state())) {
    on_fault(self, fault);
    // In debug states the pod is awaited; a stop waiting for its ranks is done.
    if (st.state() == JobState::debugStop || st.state() == JobState::debugCommand) {
      if (st.job().mode == JobMode::ray) on_ray_node_gone_while_parked(self, fault.detail);
      on_user_code_progress(self);
    }
  } else if (st.code.ranks().all_done()) {
    finalize(self);
  }
}

// The liveness timer: heartbeats out once per interval, silent pods fenced and lost.
void on_heartbeat_tick(Actor* self) {
  auto& st = self->state;
  if (st.finalizing) return;
  auto tick = st.liveness.tick(std::chrono::steady_clock::now());
  // A stall of the supervisor itself: requests (atlctl, the dashboard)
  // waited as long. Said in the log, so that one can be traced afterwards.
  if (tick.stall)
    st.log->warn("the supervisor was busy for {} ms (its liveness tick came that late)",
                 tick.stall->count());
  if (tick.send_heartbeats) {
    for (const auto& [pod, node] : st.pods.joined_pods())
      self->send<caf::message_priority::high>(node.agent, heartbeat_atom::value);
    ping_actor_hosts(self);  // a frozen host's callers hear of it within the timeout
  }
  // Deadlines of pending groups, taints and spares changing: placement catches up.
  refresh_placement(self);
  for (const auto& pod : tick.silent) {
    const JoinedPod* node = st.pods.find(pod);
    if (!node) continue;
    std::string detail = "pod " + pod + " stopped answering (no heartbeat for " +
                         format_duration(st.job().heartbeat.timeout) + ")";
    // Fenced: if it ever wakes up it kills its ranks and leaves (its lease
    // has run out by then, so they are dead already).
    self->send(node->agent, fence_atom::value, detail);
    lose_pod(self, pod, {FaultKind::pod_hung, pod, detail});
  }
  // High priority, as the heartbeats: liveness goes ahead of a flood of rank
  // reports (32,000 ranks ending at once took seconds to read).
  self->delayed_send<caf::message_priority::high>(
      self, st.liveness.tick_interval(), timeout_atom::value,
      static_cast<std::int32_t>(kHeartbeatTimer), std::int32_t{0});
}

// atlctl taint -a list|set|remove [-n NODES|all]: marks on the machines pods
// run on. A bad argument refuses the whole command and changes nothing.
}  // namespace

Result taint_nodes(Actor* self, const std::string& action, const std::string& node_text) {
  auto& st = self->state;
  if (action == "list") {
    if (!node_text.empty()) return {wire(ReplyCode::usage), "-n is only for set and remove"};
    return {wire(ReplyCode::ok),
            taints_view(st).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  }
  if (action != "set" && action != "remove")
    return {wire(ReplyCode::usage),
            "-a: unknown action " + quote(action) + " (list, set or remove)"};
  auto nodes = parse_node_list(node_text);
  if (!nodes) return {wire(ReplyCode::usage), "-n: " + nodes.error()};
  if (is_terminal(st.state()) || st.finalizing)
    return {wire(ReplyCode::refused), "job is in state " + std::string(to_string(st.state())) +
                                          ": it has ended, taint is refused"};
  Status done = Ok{};
  if (action == "set") {
    done = st.taints.set(*nodes, st.pods.machines(), TaintSource::user, "set by atlctl taint",
                         unix_ms_now());
  } else {
    done = st.taints.remove(*nodes);
  }
  if (!done) return {wire(ReplyCode::usage), done.error()};
  persist(self);
  refresh_placement(self);
  std::string line = "taint " + action + " on " + node_text + " (atlctl taint)";
  st.log->info("{}", line);
  record(self, "taint", line);
  // A restart waiting for untainted pods may go on now.
  if (action == "remove") maybe_relaunch(self);
  return {wire(ReplyCode::ok), std::string()};
}

// atlctl delete -p PODS|all: refused as a whole (nothing deleted) when a pod
// is unknown or not there; else each pod leaves and is recreated.
Result delete_pods(Actor* self, const std::string& spec) {
  auto& st = self->state;
  const JobState state = st.state();
  if (is_terminal(state) || st.finalizing)
    return {wire(ReplyCode::refused), "job is in state " + std::string(to_string(state)) +
                                          ": it has ended, delete is refused"};
  auto chosen = st.pods.select_for_delete(spec);
  if (auto* refused = std::get_if<Refusal>(&chosen)) return {wire(refused->code), refused->text};
  for (const auto& pod : std::get<std::vector<std::string>>(chosen)) {
    std::string detail = "pod " + pod + " was deleted (atlctl delete)";
    record(self, "delete", detail);
    self->send(st.pods.at(pod).agent, delete_atom::value, std::string("atlctl delete"));
    lose_pod(self, pod, {FaultKind::pod_deleted, pod, detail});
  }
  return {wire(ReplyCode::ok), std::string()};
}

namespace {

void on_node_down(Actor* self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (on_actor_down(self, msg)) return;
  if (msg.source == st.config.sink.address()) {
    fail(self, JobEvent::head_failed,
         "the head's log writer ended (" + self->system().render(msg.reason) + ")");
    return;
  }
  for (auto* head_exec : {&st.driver, &st.ray_head}) {
    if (!*head_exec || msg.source != head_exec->address()) continue;
    const std::int32_t stream = head_exec == &st.driver ? kDriverStream : kRayHeadStream;
    *head_exec = caf::actor{};
    if (msg.reason != caf::exit_reason::normal) {
      // It never reported: its process's fate is unknown, so it failed.
      auto record = st.code.ranks().find(stream);
      RankExit lost{user_code_stream(stream),
                    record == st.code.ranks().end() ? st.code.attempt() : record->second.attempt,
                    head_pod_name(st.job().job_id),
                    255,
                    0,
                    "its executor ended: " + self->system().render(msg.reason)};
      on_rank_exit(self, lost);
    }
    return;
  }
  if (st.agents_leaving.erase(msg.source) > 0) {
    if (st.agents_leaving.empty()) deliver_outcome(self);
    return;
  }
  for (const auto& [pod, node] : st.pods.joined_pods()) {
    if (node.agent.address() != msg.source) continue;
    std::string name = pod;  // lose_pod erases the entry
    lose_pod(self, name,
             {FaultKind::pod_lost, name,
              "pod " + name + " was lost (" + self->system().render(msg.reason) + ")"});
    return;
  }
}

// A rank's report counts only from the node of the pod it names (its agent's,
// or this node for the driver): a peer cannot speak for another pod, and a
// lost pod's late reports are dropped.
bool sent_from_pod(Actor* self, const std::string& pod) {
  auto& st = self->state;
  const auto& sender = self->current_sender();
  bool ok = false;
  if (sender) {
    if (pod == head_pod_name(st.job().job_id)) {
      ok = sender->node() == self->node();
    } else if (const JoinedPod* it = st.pods.find(pod)) {
      ok = it->agent.node() == sender->node();
    }
  }
  if (!ok) st.log->warn("dropped a report about pod '{}' from a node that is not its own", pod);
  return ok;
}

}  // namespace

namespace {

// At start: a record of this job in the durable state means the head was
// restarted. A run that ended there makes this a new submission (counters and
// taints dropped, log attempts numbered on); one that was running resumes
// with its restarts, taints and timeline, and the head's death costs one
// restart when user code was running. False: the budget is spent, the job failed.
bool resume(Actor* self) {
  auto& st = self->state;
  const std::string waiting =
      "waiting for " + std::to_string(st.pods.expected().size()) + " workers";
  if (!st.config.resumed) {
    record(self, "state", "job " + st.job().job_id + " submitted: " + waiting);
    persist(self);
    return true;
  }
  const os::JobRecord& r = *st.config.resumed;
  st.code.set_attempt(
      os::resumed_attempt(r));  // log directories of earlier attempts stay as they are
  if (r.state == "succeeded" || r.state == "failed") {
    st.journal->reset();
    record(self, "state",
           "job " + st.job().job_id + " submitted anew (its last run " + r.state + "): " + waiting);
    persist(self);
    return true;
  }
  for (const auto& e : r.events) {
    st.events.push_back({e.unix_ms, e.kind, e.text});
    if (st.events.size() > kMaxEvents) st.events.pop_front();
  }
  st.taints.restore(r.taints);
  st.restarts.restore(r.restarts, r.faults);
  const bool was_running =
      r.state == "command" || r.state == "restarting" || r.state == "initializing";
  std::string line =
      "the head restarted (attempt " + std::to_string(r.attempt) + " was in " + r.state + ")";
  if (was_running) {
    Fault fault{FaultKind::head_restarted, "", line, r.attempt};
    record(self, "fault", line);
    if (!st.restarts.count(fault)) {
      fail(self, JobEvent::head_failed,
           line + "; the restart budget is spent (" + std::to_string(st.restarts.used()) + "/" +
               std::to_string(st.restarts.budget()) + " restarts used)");
      return false;
    }
    line += ": restart " + std::to_string(st.restarts.used()) + "/" +
            std::to_string(st.restarts.budget());
  }
  st.log->warn("job {} resumed: {}; {}", st.job().job_id, line, waiting);
  record(self, "restart", "job resumed: " + line + "; " + waiting);
  self->send(st.config.sink, print_atom::value, "job resumed: " + line);
  persist(self);
  return true;
}

caf::behavior job_supervisor(Actor* self, SupervisorConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.tasks = TaskBook(st.config.finished_kept);
  st.debug = DebugRuns<Promise, RunMember>(st.config.finished_kept);
  if (st.config.store) {
    // SQLite off the scheduler's threads; its errors come back as a message.
    caf::actor_addr me = self->address();
    st.journal = std::make_unique<os::JournalWriter>(
        st.config.store, st.job().job_id, [me](const std::string& why) {
          if (auto supervisor = caf::actor_cast<caf::actor>(me))
            caf::anon_send(supervisor, journal_error_atom::value, why);
        });
  }
  st.restarts = RestartPolicy(
      {st.job().max_restarts, st.job().restart_on_failure, st.job().mode != JobMode::driver});
  st.liveness = Liveness(st.job().heartbeat, kLivenessTick);
  std::vector<std::string> expected;
  for (int i = 0; i < total_worker_pods(st.job()); ++i)
    expected.push_back(worker_pod_name(st.job().job_id, i));
  st.pods = Pods(st.job().job_id, std::move(expected));
  self->set_down_handler([self](const caf::down_msg& msg) { on_node_down(self, msg); });
  self->set_exception_handler(
      [self](caf::scheduled_actor*, std::exception_ptr& e) { return on_exception(self, e); });
  self->monitor(st.config.sink);
  self->send(st.config.sink, watch_atom::value);

  // The workers' and executors' messages and the head's own; atlctl's
  // (control_api) and the drivers' (driver_api) in their own files.
  return caf::message_handler{
      [self](start_atom, std::uint16_t port) {
        auto& st = self->state;
        st.address = st.config.advertised_host + ":" + std::to_string(port);
        st.log->info("job {} ({} mode) waiting for {} workers", st.job().job_id,
                     to_string(st.job().mode), st.pods.expected().size());
        if (!resume(self)) return;
        self->send(self, timeout_atom::value, static_cast<std::int32_t>(kHeartbeatTimer),
                   std::int32_t{0});
        if (st.pods.expected().empty()) {
          self->send(self, check_atom::value);
          return;
        }
        self->delayed_send(self, st.job().ready_timeout, timeout_atom::value,
                           static_cast<std::int32_t>(kReadyTimer), std::int32_t{0});
      },
      [self](register_atom, const NodeInfo& info, const caf::actor& agent)
          -> caf::result<std::string, bool, std::int64_t, std::int64_t> {
        const HeartbeatOptions& hb = self->state.job().heartbeat;
        auto refused = register_node(self, info, agent);
        if (!refused) {
          // Its own log lines come to logs/pod-worker-<i>.log (atlctl logs -p).
          if (auto index = self->state.pods.index_of(info.pod))
            self->send(agent, agent_log_atom::value, self->state.config.sink,
                       StreamId::pod_log(static_cast<std::int32_t>(*index)));
        }
        return {refused ? refused->text : std::string(), refused && refused->retry,
                std::int64_t{hb.interval.count()}, std::int64_t{hb.timeout.count()}};
      },
      [self](heartbeat_atom, const std::string& pod, std::int32_t gpus_present) {
        auto& st = self->state;
        // Only from the pod's own node: a fenced pod's late words do not count.
        const JoinedPod* it = st.pods.find(pod);
        const auto& sender = self->current_sender();
        if (!it || !sender || it->agent.node() != sender->node()) return;
        st.liveness.heard(pod, std::chrono::steady_clock::now());
        const std::int32_t declared = it->info.gpus;
        const JobState state = st.state();
        const std::string* machine = st.pods.machine_of(pod);
        GpuCount count;
        count.declared = declared;
        count.present = gpus_present;
        // Once a pre-flight found them there: before, the pre-flight speaks.
        count.checked = state == JobState::command || state == JobState::debugStop ||
                        state == JobState::debugCommand;
        count.machine_tainted = machine && st.taints.tainted(*machine);
        count.runs_ranks = std::find(st.active.begin(), st.active.end(), pod) != st.active.end() &&
                           (state == JobState::command || state == JobState::debugCommand);
        if (lost_a_gpu(count)) {
          // A GPU fell off the bus: the node is not to be used again, and the
          // pod leaves (to be recreated elsewhere); in command the job restarts.
          std::string detail = "pod " + pod + " lost a GPU (it declared " +
                               std::to_string(declared) + ", " + std::to_string(gpus_present) +
                               " are there)";
          taint_platform(self, pod, detail);
          self->send(it->agent, delete_atom::value, detail);
          lose_pod(self, pod, {FaultKind::gpu_lost, pod, detail});
        }
      },
      [self](check_atom) {
        auto& st = self->state;
        if (st.state() == JobState::pending) {
          run_checks(self);
        } else if (st.state() == JobState::restarting) {
          maybe_relaunch(self);
        }
      },
      [self](const RankStarted& started) {
        if (sent_from_pod(self, started.pod)) on_rank_started(self, started);
      },
      [self](const RankExit& exit) {
        if (sent_from_pod(self, exit.pod)) on_rank_exit(self, exit);
      },
      [self](const RankNote& note) {
        if (sent_from_pod(self, note.pod))
          on_rank_note(self, note, caf::actor_cast<caf::actor>(self->current_sender()));
      },
      [self](timeout_atom, std::int32_t kind, std::int32_t arg) {
        auto& st = self->state;
        switch (kind) {
          case kReadyTimer:
            if (st.state() == JobState::pending && arg == 0) {
              on_ready_timeout(self, "workers not ready after " +
                                         format_duration(st.job().ready_timeout) + ": missing " +
                                         st.pods.missing());
            } else if (st.state() == JobState::restarting && arg == st.restart_round) {
              // What it waits for: pods not back, pods back on tainted nodes
              // (no spare to take their place), or ranks still stopping.
              std::string missing = st.pods.missing();
              std::string why;
              if (!missing.empty()) {
                why = "pods not back: " + missing;
              } else if (auto chosen = choose_active(pod_views(st), st.job().workers, st.taints);
                         !chosen) {
                why = chosen.error();
              } else {
                why = "ranks of the faulted attempt still stopping";
              }
              on_ready_timeout(self, "restart not ready after " +
                                         format_duration(st.job().ready_timeout) + ": " + why);
            }
            break;
          case kHeartbeatTimer:
            on_heartbeat_tick(self);
            break;
          case kRestartStopTimer:
            if (st.state() == JobState::restarting && arg == st.restart_round &&
                !st.code.ranks().all_done()) {
              st.log->warn("ranks of the faulted attempt did not all report; going on");
              st.code.end_remaining("did not report after the stop");
              maybe_relaunch(self);
            }
            break;
          case kRestartRetryTimer:
            if (arg == st.restart_round) {
              st.retry_pending = false;
              maybe_relaunch(self);
            }
            break;
          case kFailStopTimer:
            if (!st.finalizing) {
              st.log->warn("ranks did not all report after the stop; ending anyway");
              finalize(self);
            }
            break;
          case kShutdownTimer:
            if (!st.agents_leaving.empty()) {
              st.log->warn("{} workers did not leave in time", st.agents_leaving.size());
              st.agents_leaving.clear();
              deliver_outcome(self);
            }
            break;
          case kLingerTimer:
            release(self);
            break;
          case kTaskStartTimer:
            on_task_start_timer(self, arg);
            break;
          default:
            on_debug_timer(self, kind, arg);
        }
      },
      [self](journal_error_atom, const std::string& why) { store_failed(self, why); },
      [self](expire_atom, std::int32_t kind, WaiterId waiter) {
        if (kind == kTaskWaitTimer) on_task_wait_timer(self, waiter);
        if (kind == kRunWaitTimer) on_run_wait_timer(self, waiter);
        if (kind == kGroupWaitTimer) on_group_timer(self, waiter);
      },
      [self](cancel_atom, const std::string& why) {
        if (self->state.finished) {
          release(self);  // a signal ends the linger
          return;
        }
        // Cancelled (the pod is being deleted): the outcome is handed over
        // without lingering.
        self->state.cancelled = true;
        fail(self, JobEvent::cancelled, "cancelled: " + why);
      },
      [self](disk_error_atom, const std::string& what) {
        fail(self, JobEvent::head_failed, "logs are incomplete: " + what);
      },
  }
      .or_else(control_api(self))
      .or_else(driver_api(self));
}

}  // namespace

}  // namespace atl::supervisor

namespace atl {

void settle_outcome(std::promise<int>& outcome, int code) {
  try {
    outcome.set_value(code);
  } catch (const std::future_error&) {
    // Already settled: the first word stands.
  }
}

caf::actor spawn_job_supervisor(caf::actor_system& sys, SupervisorConfig config) {
  return sys.spawn(supervisor::job_supervisor, std::move(config));
}

}  // namespace atl
