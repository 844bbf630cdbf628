#include "atl/supervisor/supervisor.hpp"

#include <algorithm>

#include "atl/os/child_process.hpp"
#include "atl/supervisor/status_view.hpp"

namespace atl::supervisor {

namespace {

std::vector<std::string> expected_pods(const JobSpec& job) {
  std::vector<std::string> expected;
  for (int i = 0; i < total_worker_pods(job); ++i)
    expected.push_back(worker_pod_name(job.job_id, i));
  return expected;
}

}  // namespace

Supervisor::Supervisor(SupervisorSettings settings, const Clock& clock, Outbox& out, AgentId head)
    : settings_(std::move(settings)),
      clock_(clock),
      out_(out),
      head_(head),
      pods_(settings_.job.job_id, expected_pods(settings_.job), settings_.job.heartbeat,
            settings_.tick),
      controller_({settings_.job, settings_.linger}, this),
      feed_(std::string(to_string(controller_.state()))),
      hang_(settings_.clock_ticks),
      tasks_(settings_.finished_kept),
      runs_(settings_.finished_kept),
      terminals_(settings_.terminals) {}

// --- the job's own inputs ------------------------------------------------------

void Supervisor::start(const std::string& address, const os::JobRecord* resumed) {
  address_ = address;
  // A resumed head's attempt is the next one: the log directories of
  // earlier attempts stay as they are.
  if (resumed) code_.set_attempt(os::resumed_attempt(*resumed));
  if (!controller_.start(resumed, pods_.registry().expected().size())) return;
  out_.put(effect::Arm{kHeartbeatTimer, 0, Millis{0}, true});
  if (pods_.registry().expected().empty()) out_.put(effect::CheckSoon{});
}

void Supervisor::all_in() {
  if (state() == JobState::pending) {
    controller_.all_joined();
  } else if (state() == JobState::restarting) {
    controller_.maybe_relaunch();
  }
}

bool Supervisor::timer(std::int32_t kind, std::int32_t arg) {
  if (kind >= 0 && kind < kJobTimerCount) {
    controller_.on_timer(static_cast<JobTimer>(kind), arg);
  } else if (kind == kHeartbeatTimer) {
    tick();
  } else if (kind == kTaskStartTimer) {
    TaskEffects out;
    tasks_.on_start_timer(arg, out);
    perform(std::move(out));
  } else if (kind == kSecondLookTimer) {
    perform(hang_.on_second_look(arg, hang_job(), clock_.now()));
  } else if (kind == kTaskRestartTimer) {
    restart_task(arg);
  } else {
    return debug_timer(kind, arg);
  }
  return true;
}

// The liveness tick: heartbeats out once per interval, silent pods fenced
// and lost, placement's deadlines, the hang watch's verdicts; the next tick.
void Supervisor::tick() {
  if (controller_.ending()) return;
  const auto now = clock_.now();
  perform(pods_.on_tick(now, started()));
  refresh_placement();  // deadlines of pending groups
  perform(hang_.on_tick(hang_job(), now));
  out_.put(effect::Arm{kHeartbeatTimer, 0, pods_.liveness().tick_interval(), true});
}

// --- the pods ------------------------------------------------------------------

JoinTerms Supervisor::join(const NodeInfo& info, AgentId agent) {
  // Pods join before the job starts, and a lost or deleted pod rejoins (as
  // Kubernetes recreates it) while the job restarts or is parked in debug.
  // Spares may join at any time until the job ends.
  const JobState now = state();
  Pods::Registry::JoinRules rules;
  if (is_terminal(now) || controller_.ending())
    rules.closed = "job " + job().job_id + " is in state " + std::string(to_string(now)) +
                   " and takes no new workers";
  rules.gpus_required = job().node_spec.gpus;
  bool rejoined = false;
  if (auto refused = pods_.join(info, agent, rules, clock_.now(), &rejoined))
    return JoinTerms{refused->text, refused->retry, 0, 0, {}};
  refresh_placement();  // groups waiting for resources may fit now
  out_.put(Say{false, "pod " + info.pod + (rejoined ? " rejoined" : " joined") + " from " +
                          info.address + " on node " + info.machine + " (" +
                          std::to_string(info.cpus) + " cpus, " + std::to_string(info.gpus) +
                          " gpus) [" + std::to_string(pods_.registry().joined_count()) + "/" +
                          std::to_string(pods_.registry().expected().size()) + "]"});
  if (now != JobState::pending)
    controller_.record("pod", "pod " + info.pod + " rejoined from " + info.address);
  // After the join's reply: the course must not overtake it.
  if (now == JobState::restarting || pods_.registry().all_joined()) out_.put(effect::CheckSoon{});
  const auto index = pods_.registry().index_of(info.pod).value_or(0);
  return JoinTerms{{},
                   false,
                   job().heartbeat.interval.count(),
                   job().heartbeat.timeout.count(),
                   StreamId::pod_log(static_cast<std::int32_t>(index))};
}

bool Supervisor::agent_down(AgentId agent, const std::string& words) {
  if (agent == head_) {  // the head pod's processes have no agent left to report them
    controller_.fail(JobEvent::head_failed, "the head pod's agent ended (" + words + ")");
    return true;
  }
  if (leaving_.erase(agent) > 0) {
    controller_.on_worker_left(leaving_.size());
    return true;
  }
  auto pod = pod_of_agent(agent);
  if (!pod) return false;
  perform(pods_.lose(*pod, {FaultKind::pod_lost, *pod, "pod " + *pod + " was lost (" + words + ")"},
                     started()));
  return true;
}

void Supervisor::evicted(const std::string& pod, const std::string& why) {
  perform(pods_.evict(pod, why, started()));
}

void Supervisor::on(const PodHeartbeat& heard) {
  const std::string& pod = heard.pod;
  perform(pods_.on_heartbeat(pod, heard.gpus_present, gpu_view(pod), clock_.now(), started()));
}

void Supervisor::on(const PodGpuFault& fault) {
  const std::string& pod = fault.pod;
  const std::string& reason = fault.reason;
  bool quarantined = false;
  perform(pods_.on_gpu_fault(pod, reason, gpu_view(pod), started(), &quarantined));
  if (quarantined)
    out_.put(Say{
        true, "pod " + pod + " (quarantined on a tainted machine) reports a GPU fault: " + reason});
}

std::optional<Refusal> Supervisor::on(const DeletePods& request) {
  const JobState now = state();
  if (is_terminal(now) || controller_.ending())
    return Refusal{ReplyCode::refused, "job is in state " + std::string(to_string(now)) +
                                           ": it has ended, delete is refused"};
  auto done = pods_.delete_pods(request.pods, started());
  if (auto* refused = std::get_if<Refusal>(&done)) return *refused;
  perform(std::move(std::get<Pods::Effects>(done)));
  return std::nullopt;
}

std::optional<Refusal> Supervisor::change_taints(const std::string& action,
                                                 const std::string& nodes) {
  return controller_.change_taints(action, nodes, pods_.registry().machines());
}

// What a GPU report is judged against: whether a pre-flight found the pod's
// GPUs, whether its ranks run, whether its machine is tainted.
GpuView Supervisor::gpu_view(const std::string& pod) const {
  const JobState now = state();
  const std::string* machine = pods_.registry().machine_of(pod);
  GpuView view;
  view.checked =
      now == JobState::command || now == JobState::debugStop || now == JobState::debugCommand;
  view.runs_ranks =
      controller_.is_active(pod) && (now == JobState::command || now == JobState::debugCommand);
  view.machine_tainted = machine && controller_.taints().tainted(*machine);
  return view;
}

void Supervisor::perform(Pods::Effects effects) {
  for (auto& e : effects) {
    if (std::holds_alternative<pods::HeartbeatRound>(e)) {
      ping_hosts();  // a frozen host's callers hear of it within the timeout
    } else if (auto* h = std::get_if<pods::Heartbeat<AgentId>>(&e)) {
      out_.put(effect::Heartbeat{h->agent});
    } else if (auto* f = std::get_if<pods::Fence<AgentId>>(&e)) {
      out_.put(effect::Fence{f->agent, {std::move(f->detail)}});
    } else if (auto* d = std::get_if<pods::Delete<AgentId>>(&e)) {
      out_.put(effect::Delete{d->agent, {std::move(d->detail)}});
    } else if (auto* g = std::get_if<pods::Forget<AgentId>>(&e)) {
      out_.put(effect::Forget{g->agent});
    } else if (auto* gone = std::get_if<pods::Gone>(&e)) {
      // The one fan-out of a pod gone: its tasks ended with it, its bundles
      // are placed again first, then the controller (its ranks and debug
      // runs, the fault's course). It may join again later.
      TaskEffects tasks;
      tasks_.on_pod_lost(gone->pod, tasks);
      perform(std::move(tasks));
      PlacementEffects groups;
      groups_.lose_node(gone->pod, nodes(), clock_.unix_ms(), groups);
      perform(std::move(groups));
      controller_.on_pod_gone(gone->pod, gone->fault);
    } else if (auto* r = std::get_if<pods::Record>(&e)) {
      controller_.record(r->kind, r->text);
    } else if (auto* t = std::get_if<pods::TaintPlatform>(&e)) {
      controller_.taint_platform(t->pod, t->detail);
    } else if (auto* s = std::get_if<pods::Stalled>(&e)) {
      // Requests (atlctl, the dashboard) waited as long.
      out_.put(Say{true, "the supervisor was busy for " + std::to_string(s->late.count()) +
                             " ms (its liveness tick came that late)"});
    }
  }
}

// --- user code -----------------------------------------------------------------

// Seed 002's MASTER_ADDR for what is not a rank: the head pod's name where
// it resolves to the head (e.g. jo-xxxx-head-0), else its address.
const std::string& Supervisor::master() const {
  return settings_.head_dns_name.empty() ? settings_.advertised_host : settings_.head_dns_name;
}

// WORLD_SIZE/RANK of a ray- or driver-mode process: the job's pods, the
// head first (0), then the active workers in their order (1..N).
ProcessSite Supervisor::head_site() const {
  return {head_pod_name(job().job_id), settings_.head_interface, master(), 0,
          static_cast<int>(controller_.active().size()) + 1};
}

ProcessSite Supervisor::site_at(const std::string& pod, int active_index) const {
  const NodeInfo* info = pods_.registry().info(pod);
  return {pod, info ? info->interface : std::string(), master(),
          active_index < 0 ? -1 : active_index + 1,
          static_cast<int>(controller_.active().size()) + 1};
}

ProcessSite Supervisor::pod_site(const std::string& pod) const {
  const auto& active = controller_.active();
  const auto at = std::find(active.begin(), active.end(), pod);
  return site_at(pod, at == active.end() ? -1 : static_cast<int>(at - active.begin()));
}

int Supervisor::streams_per_pod() const {
  return job().mode == JobMode::spmd ? job().nproc_per_node : 1;
}

std::string Supervisor::pod_of_rank(std::int32_t stream) const {
  if (stream < 0) return head_pod_name(job().job_id);  // the driver, Ray's head
  const auto& rank_pods = code_.rank_pods();
  if (!rank_pods.empty())
    return static_cast<size_t>(stream) < rank_pods.size() ? rank_pods[stream] : "";
  auto node = static_cast<size_t>(stream / streams_per_pod());
  const auto& active = controller_.active();
  return node < active.size() ? active[node] : std::string();
}

std::vector<PodView> Supervisor::pod_views() const {
  std::vector<PodView> views;
  const auto& expected = pods_.registry().expected();
  for (size_t i = 0; i < expected.size(); ++i) {
    const NodeInfo* info = pods_.registry().info(expected[i]);
    views.push_back(
        {expected[i], static_cast<int>(i), info ? info->machine : std::string(), info != nullptr});
  }
  return views;
}

// Every stream's launch for the active pods: at each (re)start, since a
// recreated pod may have a new address. False when the job failed instead.
bool Supervisor::plan_user_code() {
  PlanInput in;
  in.job = &job();
  in.atl = AtlEndpoint{address_, job().job_id};
  in.head_host = settings_.advertised_host;
  in.head_pod = head_pod_name(job().job_id);
  in.head_site = head_site();
  in.restarts_used = controller_.restarts().used();
  if (!controller_.restarts().history().empty())
    in.last_exit_reason = controller_.restarts().history().back().detail;
  in.ray_bin = settings_.ray_bin;
  in.ray_python = settings_.ray_python;
  in.ray_token = settings_.ray_token;
  in.ray_ready_wait = std::chrono::duration_cast<std::chrono::seconds>(job().ray_ready_timeout);
  if (job().mode != JobMode::driver) {
    // The plan walks the active pods in order: each one's index is known
    // (pod_site's search, per pod, was quadratic at thousands of pods).
    const auto& active = controller_.active();
    for (std::size_t i = 0; i < active.size(); ++i) {
      const std::string& pod = active[i];
      const NodeInfo* info = pods_.registry().info(pod);
      if (!info) {  // lost between the checks and now
        controller_.fail(JobEvent::node_lost, "pod " + pod + " was lost before its ranks started");
        return false;
      }
      in.active.push_back({*info, site_at(pod, static_cast<int>(i))});
    }
  }
  if (auto planned = code_.plan(in); !planned) {
    controller_.fail(JobEvent::rank_failed, planned.error());
    return false;
  }
  return true;
}

void Supervisor::start_user_code() {
  if (plan_user_code()) launch_user_code();
}

void Supervisor::begin_attempt_files() {
  // Each attempt's output in files of its own (before any line of it).
  if (code_.attempt() == files_attempt_) return;
  files_attempt_ = code_.attempt();
  out_.put(effect::NewAttempt{files_attempt_});
}

void Supervisor::launch_user_code(LaunchScope scope) {
  const std::int32_t attempt = code_.attempt();
  clear_groups("user code started again (attempt " + std::to_string(attempt) + ")");
  begin_attempt_files();
  auto launches = code_.begin(scope);
  controller_.persist();
  // The head pod's own processes (the driver, in ray mode Ray's head), to its agent.
  if (!launches.on_head.empty()) out_.put(effect::Launch{head_, {std::move(launches.on_head)}});
  if (!launches.by_pod.empty())
    out_.put(Say{false, "launching " + std::to_string(code_.ranks().size()) + " ranks on " +
                            std::to_string(launches.by_pod.size()) + " pods (attempt " +
                            std::to_string(attempt) + ")"});
  for (auto& [pod, batch] : launches.by_pod) {
    const auto* joined = pods_.registry().find(pod);
    if (!joined) continue;  // lost meanwhile: the loss fails the job
    out_.put(effect::Launch{joined->agent, {std::move(batch)}});
  }
}

void Supervisor::stop_user_code() {
  for (const auto& [pod, joined] : pods_.registry().joined_pods())
    out_.put(effect::StopRanks{joined.agent, {job().grace.count()}});
  // The head pod's own (driver and ray modes: the driver, Ray's head).
  if (job().mode != JobMode::spmd) out_.put(effect::StopRanks{head_, {job().grace.count()}});
}

void Supervisor::process_started(const ProcessStarted& started) {
  if (started.stream.kind == StreamKind::run) {
    run_started(started);
    return;
  }
  if (started.stream.kind == StreamKind::task) {
    TaskEffects out;
    tasks_.on_started(started.stream.run, started.pid, out);
    perform(std::move(out));
    return;
  }
  auto key = user_code_key(started.stream);
  if (!key) return;
  const bool all_before = code_.ranks().all_started();
  if (!code_.started(*key, started.attempt, started.pid)) return;
  // The moment a launch (or a restart) is done, said once: its time in the
  // head's log is how long the job took to be back.
  if (!all_before && code_.ranks().all_started() && job().mode == JobMode::spmd &&
      state() == JobState::command)
    out_.put(Say{false, "all " + std::to_string(code_.ranks().size()) + " ranks of attempt " +
                            std::to_string(code_.attempt()) + " are running"});
  user_code_progress();
}

void Supervisor::process_ended(const ProcessExit& exit) {
  if (exit.stream.kind == StreamKind::run) {
    run_ended(exit);
    return;
  }
  if (exit.stream.kind == StreamKind::task) {
    owners_.forget_task(exit.stream.run);
    TaskEffects out;
    tasks_.on_exit(exit.stream.run, exit.code, exit.signal, exit.error, out);
    perform(std::move(out));
    return;
  }
  auto user_key = user_code_key(exit.stream);
  if (!user_key || !code_.ended(*user_key, exit)) return;
  const std::int32_t key = *user_key;
  // A driver's placement groups are its own (Ray: the job's): they go with it.
  if (key == kDriverStream && job().mode == JobMode::driver) clear_groups("the driver ended");
  ExitMeaning meaning;  // what the end means is asked only while user code runs
  if (state() == JobState::command) meaning = code_.meaning(job().mode, key, exit);
  if (controller_.on_user_code_ended(meaning)) return;
  // Parked in a debug state: stopped by atlctl, no failure; maybe a stop to answer.
  if (job().mode == JobMode::ray && key != kDriverStream)
    ray_node_gone_while_parked((key == kRayHeadStream ? "Ray's head on pod " : "Ray on pod ") +
                               exit.pod + " " +
                               (exit.error.empty() ? os::ExitStatus{exit.code, exit.signal}.ended()
                                                   : "could not start: " + exit.error));
  user_code_progress();
}

void Supervisor::ray_node_gone_while_parked(const std::string& why) {
  if (!code_.ray_cluster_to_tear_down()) return;  // nothing left running, or already said
  std::string line = why +
                     " while the job was stopped: the rest of the Ray cluster is stopped; "
                     "recover starts Ray and the driver again";
  out_.put(Say{true, line});
  controller_.record("fault", line);
  out_.put(effect::Print{line});
  stop_user_code();
}

// --- the pre-flight -----------------------------------------------------------------

void Supervisor::start_preflight() {
  Preflight::Plan plan;
  for (const auto& pod : controller_.active()) plan.active.push_back(pods_.registry().at(pod).info);
  plan.spec = job().node_spec;
  if (job().mode == JobMode::driver && !job().working_dir.empty())
    plan.head = head_pod_name(job().job_id);
  preflight_.emplace(++check_round_, std::move(plan));
  ask(preflight_->start());
}

void Supervisor::answered(const PreflightBack& back, const PreflightReply& reply) {
  if (!preflight_ || preflight_->round() != back.round) return;  // superseded
  using Kind = Preflight::Ask::Kind;
  const Preflight::Ask& a = back.ask;
  switch (a.kind) {
    case Kind::head_dir:
      ask(preflight_->head_dir_checked(reply.problem));
      break;
    case Kind::probe:
      ask(preflight_->probed(a.pod, reply.port, reply.problem));
      break;
    case Kind::reach:
      ask(preflight_->reached(a.pod, reply.problem));
      break;
    case Kind::check:
      ask(preflight_->checked(a.pod, reply.problem));
      break;
  }
}

void Supervisor::unanswered(const PreflightBack& back, const NoAnswer& why) {
  if (!preflight_ || preflight_->round() != back.round) return;  // superseded
  ask(preflight_->unanswered(back.ask, why.words));
}

// What a node may take to answer a pre-flight request (a hung mount, a
// stalled connect): after it, the request is unanswered and the round fails.
constexpr Millis kPreflightTimeout{60000};

// A round's request as it goes on the wire (the step's number is its kind's).
static_assert(static_cast<int>(Preflight::Ask::Kind::head_dir) == PreflightRequest::head_dir &&
              static_cast<int>(Preflight::Ask::Kind::probe) == PreflightRequest::probe &&
              static_cast<int>(Preflight::Ask::Kind::reach) == PreflightRequest::reach &&
              static_cast<int>(Preflight::Ask::Kind::check) == PreflightRequest::check);
PreflightRequest Supervisor::preflight_request(const Preflight::Ask& a) const {
  using Kind = Preflight::Ask::Kind;
  PreflightRequest r;
  r.step = static_cast<std::int32_t>(a.kind);
  r.host = a.host;
  r.port = a.port;
  if (a.kind == Kind::head_dir || a.kind == Kind::check) r.working_dir = job().working_dir;
  return r;
}

// The round's next requests out, each step passed on the head's output, or
// its verdict acted on.
void Supervisor::ask(std::vector<Preflight::Ask> asks) {
  const std::int32_t round = preflight_->round();
  for (auto& a : asks) {
    AgentId agent = head_;  // the head pod's agent checks its dir
    if (a.kind != Preflight::Ask::Kind::head_dir) {
      const auto* joined = pods_.registry().find(a.pod);
      if (!joined) {  // gone since the round began (its loss drops the round too)
        preflight_->pod_left(a.pod);
        break;
      }
      agent = joined->agent;
    }
    auto request = preflight_request(a);
    out_.put(effect::Ask{agent, std::move(request), kPreflightTimeout, {round, std::move(a)}});
  }
  // Each step as it passes, on the head's output (stdout and head.log): a
  // start that says what it checked, not only what failed.
  if (preflight_)
    for (auto& line : preflight_->take_passed()) out_.put(effect::Print{std::move(line)});
  if (preflight_ && preflight_->done()) {
    Preflight::Verdict verdict = *preflight_->verdict();
    preflight_.reset();
    controller_.on_preflight_verdict(verdict);
  }
}

// --- the hang watch ---------------------------------------------------------------

HangJob Supervisor::hang_job() const {
  HangJob j;
  j.spmd_command = state() == JobState::command && job().mode == JobMode::spmd;
  j.timeout = job().hang_timeout;
  j.factor = job().hang_factor;
  j.attempt = code_.attempt();
  j.rank_pods = &code_.rank_pods();
  return j;
}

void Supervisor::on(const PodProgress& progress) {
  perform(hang_.on_progress(progress.pod, progress.reports, hang_job(), clock_.now()));
}

// What a pod may spend on its ranks' stacks, and what the head waits for
// its answer beyond that.
constexpr Millis kStackBudget{5000};
constexpr Millis kStackSlack{15000};

void Supervisor::look(LookPurpose purpose, const std::vector<AgentId>& agents,
                      const std::vector<std::int32_t>& no_stop) {
  if (agents.empty()) return looked(std::move(purpose), {});
  const LookId id = looks_.begin(std::move(purpose), agents);
  for (AgentId agent : agents)
    out_.put(effect::TakeStacks{
        agent, {kStackBudget.count(), no_stop}, kStackBudget + kStackSlack, {id, agent}});
}

void Supervisor::answered(const LookBack& back, std::vector<StackReport> reports) {
  if (auto done = looks_.answer(back.look, back.agent, std::move(reports)))
    looked(std::move(done->purpose), std::move(done->reports));
}

void Supervisor::unanswered(const LookBack& back, const NoAnswer&) { answered(back, {}); }

void Supervisor::looked(LookPurpose purpose, std::vector<StackReport> reports) {
  if (auto* hang = std::get_if<HangLook>(&purpose)) {
    perform(hang_.on_stacks(hang->round, reports, hang_job(), clock_.now()));
  } else {
    auto& d = std::get<DiagnoseLook>(purpose);
    out_.put(Answer{d.reply, ReplyCode::ok,
                    diagnose_json(*this, std::move(reports), d.ask, d.with_stacks)});
  }
}

std::optional<Refusal> Supervisor::on(const Diagnose& request, const Keep& keep) {
  auto ask = diagnose_ask(*this, request.ranks);
  if (auto* no = std::get_if<Refusal>(&ask)) return *no;
  auto& a = std::get<DiagnoseAsk>(ask);
  const std::vector<AgentId> agents = a.agents;
  look(DiagnoseLook{keep(), std::move(a), request.with_stacks}, agents, {});
  return std::nullopt;
}

void Supervisor::perform(HangEffects effects) {
  for (auto& e : effects) {
    if (auto* r = std::get_if<hang::Record>(&e)) {
      controller_.record("hang", r->text);
    } else if (auto* s = std::get_if<hang::Say>(&e)) {
      out_.put(std::move(*s));
    } else if (auto* t = std::get_if<hang::TakeStacks>(&e)) {
      look(HangLook{t->round}, agents_of_ranks({}), t->no_stop);
    } else if (auto* a = std::get_if<hang::ArmSecondLook>(&e)) {
      out_.put(effect::Arm{kSecondLookTimer, a->attempt, a->after, false});
    } else if (auto* k = std::get_if<hang::KeepFile>(&e)) {
      out_.put(std::move(*k));
    } else if (auto* h = std::get_if<hang::Hung>(&e)) {
      controller_.on_hung(h->pods, h->reason);
    } else if (auto* g = std::get_if<hang::Straggler>(&e)) {
      controller_.on_straggler(g->pod, g->line);
    } else if (std::holds_alternative<hang::Progressed>(e)) {
      controller_.on_progress();  // goodput's clock
    }
  }
}

std::vector<AgentId> Supervisor::agents_of_ranks(const std::vector<int>& only) const {
  const auto& rank_pods = code_.rank_pods();
  std::vector<std::string> seen;
  std::vector<AgentId> agents;
  auto add = [&](const std::string& pod) {
    if (std::find(seen.begin(), seen.end(), pod) != seen.end()) return;
    seen.push_back(pod);
    if (const auto* joined = pods_.registry().find(pod)) agents.push_back(joined->agent);
  };
  if (only.empty()) {
    for (const auto& pod : rank_pods) add(pod);
  } else {
    for (int rank : only)
      if (rank >= 0 && static_cast<std::size_t>(rank) < rank_pods.size()) add(rank_pods[rank]);
  }
  return agents;
}

std::optional<AgentId> Supervisor::agent_of(const std::string& pod) const {
  if (const auto* joined = pods_.registry().find(pod)) return joined->agent;
  return std::nullopt;
}

std::optional<std::string> Supervisor::pod_of_agent(AgentId agent) const {
  return pods_.registry().pod_of_agent([&](AgentId a) { return a == agent; });
}

void Supervisor::crashed(const std::string& reason) {
  out_.put(effect::Ending{});
  controller_.crashed(reason);
  out_.put(effect::Print{"job failed: " + reason});
  out_.put(effect::Print{"Job status:  failed"});
  for (const auto& [pod, joined] : pods_.registry().joined_pods())
    out_.put(effect::Shutdown{joined.agent, {1}});
  out_.put(effect::Shutdown{head_, {1}});
  abandon_owed("the supervisor failed: " + reason);
}

// --- JobEffects -------------------------------------------------------------------

void Supervisor::print(const std::string& line) { out_.put(effect::Print{line}); }
void Supervisor::save(os::JobRecord record) { out_.put(effect::Save{std::move(record)}); }
void Supervisor::add_event(const TimelineEvent& event) {
  out_.put(effect::AddEvent{event});
  if (event.kind == "state") {  // a change of the job's state (JobController::apply)
    FeedEffects out;
    feed_.changed(std::string(to_string(state())), out);
    perform(std::move(out));
  }
}

// --- status -w ---------------------------------------------------------------------

std::optional<Answer> Supervisor::on(const StateWatch& request, const Keep& keep) {
  if (auto now = feed_.answer_now(request.seen, request.timeout_ms)) return now;
  FeedEffects out;
  feed_.await(request.seen, keep(), Millis(request.timeout_ms), out);
  perform(std::move(out));
  return std::nullopt;
}

void Supervisor::perform(FeedEffects effects) {
  for (auto& e : effects) {
    if (auto* a = std::get_if<Answer>(&e)) {
      out_.put(std::move(*a));
    } else if (auto* w = std::get_if<ArmWaitTimer>(&e)) {
      out_.put(effect::ArmWait{kStateWatchTimer, w->waiter, w->after});
    }
  }
}
void Supervisor::reset_journal() { out_.put(effect::ResetJournal{}); }

void Supervisor::arm(JobTimer timer, std::chrono::milliseconds delay, std::int32_t tag) {
  out_.put(effect::Arm{static_cast<std::int32_t>(timer), tag, delay, false});
}

void Supervisor::end_parked_debug_run() {
  if (runs_.tracked() == 0) return;
  end_run_everywhere(runs_.release_tracked());
}

void Supervisor::end_pod_work(const std::string& pod) {
  code_.pod_lost(pod);  // its ranks, through a per-pod index (not a walk over the job's)
  // Debug commands on that pod end too (their waiters get an answer).
  for (const auto& [id, rank] : runs_.running_on(pod))
    run_ended({StreamId::of_run(id, rank), id, pod, 255, 0, "pod lost", ""});
}

void Supervisor::pod_gone_while_parked(const std::string& detail) {
  if (job().mode == JobMode::ray) ray_node_gone_while_parked(detail);
  user_code_progress();
}

void Supervisor::placement_changed() { refresh_placement(); }

std::size_t Supervisor::wind_down(bool ok) {
  clear_groups("the job ended");
  code_.end_remaining("abandoned");
  out_.put(effect::Ending{});
  for (const auto& [pod, joined] : pods_.registry().joined_pods()) {
    out_.put(effect::Shutdown{joined.agent, {ok ? 0 : 1}});
    leaving_.insert(joined.agent);
  }
  return leaving_.size();
}

void Supervisor::release(int outcome) {
  abandon_owed("the job ended (" + std::string(to_string(state())) +
               ") before this command finished");
  out_.put(effect::Release{outcome});
}

}  // namespace atl::supervisor
