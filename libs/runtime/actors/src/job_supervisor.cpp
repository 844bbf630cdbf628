// The JobSupervisor's shell: its state's birth (the pieces made from the
// config), the job's lifecycle (apply, the journal, the ending and the
// outcome), a pod joining, the pre-flight's verdict, resuming after a head
// restart, the head's own messages (start, timers, signals) and the behaviour
// joining the three interfaces (worker_api, control_api, driver_api). User
// code, faults, the pre-flight's requests, debug commands, placement, tasks,
// named actors and status are in the supervisor_*.cpp files beside it.
#include "atl/actors/job_supervisor.hpp"

#include "atl/actors/actor_system_setup.hpp"
#include "atl/core/status_page.hpp"
#include "atl/os/job_store.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

constexpr auto kShutdownTimeout = std::chrono::seconds(10);
// How often expiries are looked for: a silent node is declared lost at most
// this long after its timeout.
constexpr auto kLivenessTick = std::chrono::milliseconds(100);
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

// --- command -----------------------------------------------------------------

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

// --- ending ------------------------------------------------------------------

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

}  // namespace

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

// --- joining and checks --------------------------------------------------------

// A pre-flight round's verdict: user code starts, or the pod to blame is
// tainted and the fault takes its course.
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
  if (auto pod = st.pods.pod_of_agent(
          [&](const caf::actor& agent) { return agent.address() == msg.source; }))
    lose_pod(self, *pod,
             {FaultKind::pod_lost, *pod,
              "pod " + *pod + " was lost (" + self->system().render(msg.reason) + ")"});
}

}  // namespace

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

  // The head's own messages (its start, timers, signals); the workers' and
  // executors' (worker_api), atlctl's (control_api) and the drivers'
  // (driver_api) in their own files.
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
      .or_else(worker_api(self))
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
