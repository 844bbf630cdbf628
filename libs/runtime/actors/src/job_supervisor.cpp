// The JobSupervisor's shell: its state's birth (the pieces made from the
// config), the JobEffects through which the JobController reaches the
// pieces and the world, a pod joining or going down, resuming after a head
// restart, the head's own messages (start, timers, signals) and the
// behaviour joining the three interfaces (worker_api, control_api,
// driver_api). User code, faults, the pre-flight's requests, debug
// commands, placement, tasks, named actors and status are in the
// supervisor_*.cpp files beside it.
#include "atl/actors/job_supervisor.hpp"

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/exit_words.hpp"
#include "atl/core/status_page.hpp"
#include "atl/os/job_store.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

// How often expiries are looked for: a silent node is declared lost at most
// this long after its timeout.
constexpr auto kLivenessTick = std::chrono::milliseconds(100);

// The controller's way to the pieces it does not own and to the world.
class ShellEffects final : public JobEffects {
 public:
  explicit ShellEffects(Actor* self) : self_(self) {}

  std::int64_t unix_ms() const override { return unix_ms_now(); }
  int attempt() const override { return st().code.attempt(); }
  bool user_code_done() const override { return st().code.ranks().all_done(); }
  std::vector<PodView> pod_views() const override { return supervisor::pod_views(st()); }
  std::string missing_pods() const override { return st().pods.registry().missing(); }
  const std::string* machine_of(const std::string& pod) const override {
    return st().pods.registry().machine_of(pod);
  }
  bool preflight_under_way() const override { return st().preflight.has_value(); }

  void print(const std::string& line) override {
    self_->send(st().config.sink, print_atom::value, line);
  }
  void save(os::JobRecord record) override {
    if (st().journal) st().journal->save(std::move(record));  // on the journal's thread
  }
  void add_event(const TimelineEvent& e) override {
    if (st().journal) st().journal->add_event({e.unix_ms, e.kind, e.text});
  }
  void reset_journal() override {
    if (st().journal) st().journal->reset();
  }
  void arm(JobTimer timer, std::chrono::milliseconds delay, std::int32_t tag) override {
    self_->delayed_send(self_, delay, timeout_atom::value, static_cast<std::int32_t>(timer), tag);
  }
  void next_attempt() override { st().code.next_attempt(); }
  void start_user_code() override {
    if (plan_user_code(self_)) launch_user_code(self_);
  }
  void stop_user_code() override { supervisor::stop_user_code(self_); }
  void abandon_user_code(const std::string& why) override { st().code.end_remaining(why); }
  void start_preflight() override { preflight(self_); }
  void drop_preflight() override { st().preflight.reset(); }
  void end_parked_debug_run() override {
    if (st().debug.tracked() == 0) return;
    const RunId run = st().debug.release_tracked();
    auto grace = static_cast<std::int64_t>(st().job().grace.count());
    for (const auto& [pod, node] : st().pods.registry().joined_pods())
      self_->send(node.agent, stop_atom::value, StreamId::of_run(run, 0), grace);
  }
  void end_pod_work(const std::string& pod) override {
    st().code.pod_lost(pod);  // its ranks, through a per-pod index (not a walk over the job's)
    // Debug commands on that pod end too (their waiters get an answer).
    for (const auto& [id, rank] : st().debug.running_on(pod)) {
      ProcessExit lost{StreamId::of_run(id, rank), id, pod, 255, 0, "pod lost", ""};
      on_debug_exit(self_, lost, lost.stream);
    }
  }
  void pod_gone_while_parked(const std::string& detail) override {
    if (st().job().mode == JobMode::ray) on_ray_node_gone_while_parked(self_, detail);
    on_user_code_progress(self_);
  }
  void placement_changed() override { refresh_placement(self_); }
  std::size_t wind_down(bool ok) override {
    auto& s = st();
    clear_groups(self_, "the job ended");
    s.code.end_remaining("abandoned");
    s.config.ending->store(true);
    for (const auto& [pod, node] : s.pods.registry().joined_pods()) {
      self_->send(node.agent, shutdown_atom::value, static_cast<std::int32_t>(ok ? 0 : 1));
      s.agents_leaving.insert(node.agent.address());
    }
    return s.agents_leaving.size();
  }
  void release(int outcome) override {
    auto& s = st();
    answer_owed_replies(self_, "the job ended (" + std::string(to_string(s.state())) +
                                   ") before this command finished");
    // The durable record is complete before the head says how the job ended
    // (the one wait on the journal: a resumed head must find the final state).
    if (s.journal) s.journal->flush();
    settle_outcome(*s.config.outcome, outcome);
    self_->quit();
  }

 private:
  State& st() const { return self_->state; }
  Actor* self_;
};

// The supervisor's state may be half-updated: do only what cannot make it
// worse. Say why, tell every worker to stop its ranks and leave, answer every
// waiting atlctl, hand over "failed". headnode then exits 1.
caf::error on_exception(Actor* self, const std::exception_ptr& e) {
  auto& st = self->state;
  std::string reason = "internal error in the supervisor: " + describe_exception(e);
  st.log->critical("job {} failed: {}", st.job().job_id, reason);
  st.config.ending->store(true);
  st.controller.crashed(reason);
  self->send(st.config.sink, print_atom::value, "job failed: " + reason);
  self->send(st.config.sink, print_atom::value, std::string("Job status:  failed"));
  for (const auto& [pod, node] : st.pods.registry().joined_pods())
    self->send(node.agent, shutdown_atom::value, std::int32_t{1});
  if (st.driver) self->send(st.driver, stop_atom::value, std::int64_t{st.job().grace.count()});
  answer_owed_replies(self, "the supervisor failed: " + reason);
  settle_outcome(*st.config.outcome, 1);
  return caf::exit_reason::unhandled_exception;
}

}  // namespace

std::int64_t unix_ms_now() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
}

// Every worker pod as choose_active sees it: index, node, joined or not.
std::vector<PodView> pod_views(const State& st) {
  std::vector<PodView> pods;
  const auto& expected = st.pods.registry().expected();
  for (size_t i = 0; i < expected.size(); ++i) {
    const NodeInfo* info = st.pods.registry().info(expected[i]);
    pods.push_back(
        {expected[i], static_cast<int>(i), info ? info->machine : std::string(), info != nullptr});
  }
  return pods;
}

// --- joining and checks --------------------------------------------------------

// Why the pod may not join (a retry: its old self is about to be declared
// lost), or nullopt when it joined.
std::optional<Refusal> register_node(Actor* self, const NodeInfo& info, const caf::actor& agent) {
  auto& st = self->state;
  // Pods join before the job starts, and a lost or deleted pod rejoins (as
  // Kubernetes recreates it) while the job restarts or is parked in debug.
  // Spares may join at any time until the job ends.
  const JobState state = st.state();
  Pods::Registry::JoinRules rules;
  if (is_terminal(state) || st.ending())
    rules.closed = "job " + st.job().job_id + " is in state " + std::string(to_string(state)) +
                   " and takes no new workers";
  rules.gpus_required = st.job().node_spec.gpus;
  bool rejoined = false;
  if (auto refused = st.pods.join(info, agent, rules, std::chrono::steady_clock::now(), &rejoined))
    return refused;
  self->monitor(agent);
  refresh_placement(self);  // groups waiting for resources may fit now
  st.log->info("pod {} {} from {} on node {} ({} cpus, {} gpus) [{}/{}]", info.pod,
               rejoined ? "rejoined" : "joined", info.address, info.machine, info.cpus, info.gpus,
               st.pods.registry().joined_count(), st.pods.registry().expected().size());
  if (state != JobState::pending)
    st.controller.record("pod", "pod " + info.pod + " rejoined from " + info.address);
  // After this reply is sent: the check request must not overtake it.
  if (state == JobState::restarting || st.pods.registry().all_joined())
    self->send(self, check_atom::value);
  return std::nullopt;
}

namespace {

void on_node_down(Actor* self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (on_actor_down(self, msg)) return;
  if (msg.source == st.config.sink.address()) {
    st.controller.fail(JobEvent::head_failed, "the head's log writer ended (" +
                                                  exit_words(msg.reason, self->system()) + ")");
    return;
  }
  for (auto* head_exec : {&st.driver, &st.ray_head}) {
    if (!*head_exec || msg.source != head_exec->address()) continue;
    const std::int32_t stream = head_exec == &st.driver ? kDriverStream : kRayHeadStream;
    *head_exec = caf::actor{};
    if (msg.reason != caf::exit_reason::normal) {
      // It never reported: its process's fate is unknown, so it failed.
      auto record = st.code.ranks().find(stream);
      ProcessExit lost{user_code_stream(stream),
                       record == st.code.ranks().end() ? st.code.attempt() : record->second.attempt,
                       head_pod_name(st.job().job_id),
                       255,
                       0,
                       "its executor ended: " + exit_words(msg.reason, self->system()),
                       ""};
      on_process_exit(self, lost);
    }
    return;
  }
  if (st.agents_leaving.erase(msg.source) > 0) {
    st.controller.on_worker_left(st.agents_leaving.size());
    return;
  }
  if (auto pod = st.pods.registry().pod_of_agent(
          [&](const caf::actor& agent) { return agent.address() == msg.source; }))
    lose_pod(self, *pod,
             {FaultKind::pod_lost, *pod,
              "pod " + *pod + " was lost (" + exit_words(msg.reason, self->system()) + ")"});
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
    } else if (const JoinedPod* it = st.pods.registry().find(pod)) {
      ok = it->agent.node() == sender->node();
    }
  }
  if (!ok) st.log->warn("dropped a report about pod '{}' from a node that is not its own", pod);
  return ok;
}

namespace {

caf::behavior job_supervisor(Actor* self, SupervisorConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.terminals = TerminalBook(st.config.web_terminal);
  st.tasks = TaskCourse(st.config.finished_kept);
  st.debug = Runs(st.config.finished_kept);
  if (st.config.store) {
    // SQLite off the scheduler's threads; its errors come back as a message.
    caf::actor_addr me = self->address();
    st.journal = std::make_unique<os::JournalWriter>(
        st.config.store, st.job().job_id, [me](const std::string& why) {
          if (auto supervisor = caf::actor_cast<caf::actor>(me))
            caf::anon_send(supervisor, journal_error_atom::value, why);
        });
  }
  st.effects = std::make_unique<ShellEffects>(self);
  st.controller = JobController({st.job(), st.config.linger}, st.effects.get());
  std::vector<std::string> expected;
  for (int i = 0; i < total_worker_pods(st.job()); ++i)
    expected.push_back(worker_pod_name(st.job().job_id, i));
  st.pods = Pods(st.job().job_id, std::move(expected), st.job().heartbeat, kLivenessTick);
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
                     to_string(st.job().mode), st.pods.registry().expected().size());
        // A resumed head's attempt is the next one: the log directories of
        // earlier attempts stay as they are.
        if (st.config.resumed) st.code.set_attempt(os::resumed_attempt(*st.config.resumed));
        if (!st.controller.start(st.config.resumed.get(), st.pods.registry().expected().size()))
          return;
        self->send(self, timeout_atom::value, static_cast<std::int32_t>(kHeartbeatTimer),
                   std::int32_t{0});
        if (st.pods.registry().expected().empty()) self->send(self, check_atom::value);
      },
      [self](timeout_atom, std::int32_t kind, std::int32_t arg) {
        auto& st = self->state;
        if (kind >= 0 && kind < kJobTimerCount) {
          st.controller.on_timer(static_cast<JobTimer>(kind), arg);
        } else if (kind == kHeartbeatTimer) {
          on_heartbeat_tick(self);
        } else if (kind == kTaskStartTimer) {
          on_task_start_timer(self, arg);
        } else if (kind == kSecondLookTimer) {
          on_second_look_timer(self, arg);
        } else {
          on_debug_timer(self, kind, arg);
        }
      },
      [self](journal_error_atom, const std::string& why) {
        self->state.controller.journal_failed(why);
      },
      [self](expire_atom, std::int32_t kind, WaiterId waiter) {
        if (kind == kTaskWaitTimer) on_task_wait_timer(self, waiter);
        if (kind == kRunWaitTimer) on_run_wait_timer(self, waiter);
        if (kind == kGroupWaitTimer) on_group_timer(self, waiter);
      },
      [self](cancel_atom, const std::string& why) { self->state.controller.cancel(why); },
      [self](disk_error_atom, const std::string& what) {
        self->state.controller.fail(JobEvent::head_failed, "logs are incomplete: " + what);
      },
  }
      .or_else(worker_api(self))
      .or_else(control_api(self))
      .or_else(driver_api(self))
      .or_else(terminal_api(self));
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
