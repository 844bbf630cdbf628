// Supervisor: the job's course in plain C++, the pieces a job's life runs
// through composed in one place. It owns the pods' course (PodCourse), the
// JobController (and is its JobEffects: the controller's only way out), the
// user code (UserCode), the pre-flight round under way (Preflight) and the
// hang watch's course (HangCourse), and it is the only place that fans an
// input out to them: a pod joins, is heard, goes silent, is told to go; a
// process starts or ends; samples and stacks come in; a timer fires.
//
// It owns the driver's placement groups (PlacementBook) and tasks
// (TaskCourse), and atlctl's debug commands (DebugRuns, DebugCourse: stop,
// run, check, burn, recover) too: a pod gone, the taints changed, a new
// attempt, a rank's end reach them here, not through the shell.
//
// Each input reads the time from the injected Clock and puts what follows
// into the Outbox as values (effect::…), in order: a message to an agent
// (by AgentId), a control line back to the executor that forwarded a
// process's note (by ExecutorRef), a process on the head, a timer, an
// answer to a request the shell keeps (by ReplyId), a line printed, a
// journal write. The shell executes each effect as it is put, in that
// order. Tests collect the effects and run the whole course in fake time,
// without CAF or processes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "atl/core/env.hpp"
#include "atl/core/job_spec.hpp"
#include "atl/core/node_info.hpp"
#include "atl/core/orders.hpp"
#include "atl/core/process_messages.hpp"
#include "atl/core/requests.hpp"
#include "atl/core/run_status.hpp"
#include "atl/core/stacks.hpp"
#include "atl/gpu/rendezvous.hpp"
#include "atl/os/job_store.hpp"
#include "atl/supervisor/actor_directory.hpp"
#include "atl/supervisor/answers.hpp"
#include "atl/supervisor/debug_course.hpp"
#include "atl/supervisor/debug_runs.hpp"
#include "atl/supervisor/handle_map.hpp"
#include "atl/supervisor/hang_course.hpp"
#include "atl/supervisor/job_controller.hpp"
#include "atl/supervisor/owners.hpp"
#include "atl/supervisor/placement_book.hpp"
#include "atl/supervisor/pod_course.hpp"
#include "atl/supervisor/preflight.hpp"
#include "atl/supervisor/refusal.hpp"
#include "atl/supervisor/settings.hpp"
#include "atl/supervisor/stack_looks.hpp"
#include "atl/supervisor/state_feed.hpp"
#include "atl/supervisor/task_course.hpp"
#include "atl/supervisor/task_restarts.hpp"
#include "atl/supervisor/terminal_book.hpp"
#include "atl/supervisor/user_code.hpp"

namespace atl::supervisor {

// One joined incarnation of a pod's node agent, numbered by the shell, which
// maps it to the agent's actor: a pod that rejoins comes with a new one, and
// its fenced old self keeps its own.
struct AgentId {
  std::int64_t value = 0;
  friend bool operator==(AgentId a, AgentId b) { return a.value == b.value; }
  friend bool operator!=(AgentId a, AgentId b) { return a.value != b.value; }
  friend bool operator<(AgentId a, AgentId b) { return a.value < b.value; }
};

// The executor that forwarded a process's control line (a burn's hello),
// numbered by the shell: the answer goes back to it.
struct ExecutorRef {
  std::int64_t value = 0;
  friend bool operator==(ExecutorRef a, ExecutorRef b) { return a.value == b.value; }
  friend bool operator<(ExecutorRef a, ExecutorRef b) { return a.value < b.value; }
};

// A named actor's host as registered (one per registration), numbered by the
// shell, which maps it to the host's actor.
struct HostId {
  std::int64_t value = 0;
  friend bool operator==(HostId a, HostId b) { return a.value == b.value; }
  friend bool operator!=(HostId a, HostId b) { return a.value != b.value; }
  friend bool operator<(HostId a, HostId b) { return a.value < b.value; }
};
// The job's named actors: each name's host, its callers' replies.
using NamedActors = ActorDirectory<HostId, ReplyId>;

// One allreduce member of a burn or check: its hello, and the executor that
// forwarded it (the answer goes back the same way).
struct RunMember {
  gpu::RendezvousHello hello;
  ExecutorRef executor;
};
// One `atlctl run`/check/burn: the command on some ranks, each with a stream
// of its own.
using DebugRun = BasicDebugRun<RunMember>;
using Runs = DebugRuns<RunMember>;
// run_wait's answer: each rank's state.
RunStatus run_status(const DebugRun& run);

// atlctl stop's answer: the code, a line when refused, the stop to wait for.
struct StopAnswer {
  ReplyCode code = ReplyCode::ok;
  std::string text;
  StopId op = 0;
};

// Every timer of the head, as (kind, arg): kinds below kJobTimerCount are
// the JobController's (JobTimer, its round as arg); the Supervisor's own
// follow; the rest are the shell's (debug runs, long polls, tasks).
enum TimerKind : std::int32_t {
  kDebugStopTimer = 16,  // ranks did not report after atlctl stop: answer anyway
  kRunWaitTimer,         // a run_wait long poll is due an answer (expire_atom: its waiter)
  kStartTimer,           // a debug run's ranks did not report started (arg: the run)
  kRecoverStartTimer,    // a recover's ranks did not report started (arg: its attempt)
  kHeartbeatTimer,       // every liveness tick: heartbeats out, silent pods fenced, hangs
  kGroupWaitTimer,       // a pg_wait long poll is due an answer (expire_atom: its waiter)
  kTaskWaitTimer,        // a task_wait long poll is due an answer (expire_atom: its waiter)
  kTaskStartTimer,       // a task did not report started (arg: the task)
  kRunDeadlineTimer,     // a burn or check ran past its deadline (arg: the run)
  kSecondLookTimer,      // a suspect job's stacks are looked at again (arg: the attempt)
  kTaskRestartTimer,     // a detached task's chain starts again (arg: its first task)
  kStateWatchTimer,      // a status -w long poll is due an answer (expire_atom: its waiter)
};
static_assert(kJobTimerCount < kDebugStopTimer);

// The head's time: monotonic for deadlines, wall-clock for records.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Liveness::TimePoint now() const = 0;
  virtual std::int64_t unix_ms() const = 0;
};

// The real one (the head's; the unit tests' is fake).
class SystemClock final : public Clock {
 public:
  Liveness::TimePoint now() const override { return std::chrono::steady_clock::now(); }
  std::int64_t unix_ms() const override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
};

// atlctl diagnose [-r RANKS]: which ranks' stacks to take (empty: every
// rank), and from which pods' agents (diagnose_ask, status_view.hpp).
struct DiagnoseAsk {
  std::vector<int> only;
  std::vector<AgentId> agents;
};

// What a look at the stacks is for: the hang watch's round, or an atlctl
// diagnose's answer (its JSON with the stacks when `with_stacks`).
struct HangLook {
  std::int32_t round = 0;
};
struct DiagnoseLook {
  ReplyId reply = 0;
  DiagnoseAsk ask;
  bool with_stacks = false;
};
using LookPurpose = std::variant<HangLook, DiagnoseLook>;

// What an ask (effect::Query) was for, handed back with its answer: a
// round's pre-flight step; one agent's part of a look at the stacks; a
// named actor's call; a host's ping.
struct PreflightBack {
  std::int32_t round = 0;
  Preflight::Ask ask;
};
struct LookBack {
  LookId look = 0;
  AgentId agent;
};
struct CallBack {
  std::string name;
  CallId call = 0;
};
struct PingBack {
  std::string name;
  HostId host;
};
// Why an ask got no answer: its `timeout` passed, or it failed (`words`:
// how, as said to people; the peer gone included).
struct NoAnswer {
  bool timed_out = false;
  std::string words;
  Millis timeout{0};
};

namespace effect {
// --- to a pod's node agent ---
struct Heartbeat {  // high priority: liveness goes ahead of a flood of reports
  AgentId agent;
};
// An order to the agent, sent as it is (atl/core/orders.hpp).
template <class Order>
struct ToAgent {
  AgentId agent;
  Order order;
};
using Fence = ToAgent<agent_order::Fence>;
using Delete = ToAgent<agent_order::Delete>;
using Launch = ToAgent<agent_order::Launch>;
using RunOn = ToAgent<agent_order::Run>;
using StopStream = ToAgent<agent_order::StopStream>;
using StopRanks = ToAgent<agent_order::StopRanks>;
using Shutdown = ToAgent<agent_order::Shutdown>;
struct Forget {  // no longer a pod's agent: its going down means nothing now
  AgentId agent;
};
// An ask of a peer (a pod's agent, a named actor's host), answered back:
// `request` sent to `to`, its answer within `timeout` to answered(back, …),
// or why none came to unanswered(back, …). `back` says what it was for.
template <class To, class Request, class Back>
struct Query {
  To to;
  Request request;
  Millis timeout{0};
  Back back;
};
using Ask = Query<AgentId, PreflightRequest, PreflightBack>;  // a pre-flight step
using TakeStacks = Query<AgentId, StackRequest, LookBack>;    // a look at the stacks
// --- on the head ---
struct ControlReply {  // a line back on a process's control channel, through its executor
  ExecutorRef executor;
  std::string line;
};
struct Arm {  // timer(kind, arg) after `after`
  std::int32_t kind = 0;
  std::int32_t arg = 0;
  Millis after{0};
  bool urgent = false;  // high priority, as the heartbeats
};
struct ArmWait {  // wait_expired(kind, waiter) after `after`: a long poll's deadline
  std::int32_t kind = 0;
  WaiterId waiter = 0;
  Millis after{0};
};
struct CheckSoon {  // all_in() once the current request was answered (a join's reply first)
};
// --- the head's output, the logs and the durable record ---
// To the head's log sink, sent as they are (atl/core/orders.hpp).
using Print = sink_order::Print;
using NewAttempt = sink_order::NewAttempt;
using KeepFile = sink_order::KeepFile;
struct Save {
  os::JobRecord record;
};
struct AddEvent {
  TimelineEvent event;
};
struct ResetJournal {};
using StreamsEnded = sink_order::StreamsEnded;
using ForgetStreams = sink_order::ForgetStreams;
struct Ending {  // the job is ending: a worker pod that exits is not recreated
};
struct Release {  // the journal flushed, the outcome out, the actor ends (owed answers given)
  int outcome = 1;
};
using CallHost = Query<HostId, HostCall, CallBack>;  // a named actor's call
struct CallAnswer {  // a named actor's answer to its caller, its code as the host gave it
  ReplyId reply = 0;
  std::int32_t code = 0;
  std::string text;
};
using PingHost = Query<HostId, HostPing, PingBack>;  // does the host still answer?
struct Unwatch {  // no longer a named actor's host: its going down means nothing now
  HostId host;
};
}  // namespace effect

using Effect =
    std::variant<effect::Heartbeat, effect::Fence, effect::Delete, effect::Forget, effect::Launch,
                 effect::RunOn, effect::StopStream, effect::StopRanks, effect::Shutdown,
                 effect::Ask, effect::TakeStacks, effect::ControlReply, effect::Arm,
                 effect::ArmWait, effect::CheckSoon, Answer, task::Answer, debug::AnswerRun,
                 effect::Print, effect::NewAttempt, effect::KeepFile, effect::Save,
                 effect::AddEvent, effect::ResetJournal, effect::StreamsEnded,
                 effect::ForgetStreams, effect::Ending, effect::Release, Say, effect::CallHost,
                 effect::CallAnswer, effect::PingHost, effect::Unwatch>;

// Where the effects go, one by one, in order.
class Outbox {
 public:
  virtual ~Outbox() = default;
  virtual void put(Effect effect) = 0;
};

// A web terminal the Supervisor allowed: its id, and the agent of its pod,
// which starts the shell (terminal_started).
struct TerminalOpening {
  TerminalId id;
  AgentId agent;
};

// A request answered later is kept: `keep()` gives its ReplyId (called
// only when it is kept, so a refusal given now keeps nothing).
using Keep = std::function<ReplyId()>;

class Supervisor final : private JobEffects {
 public:
  using Pods = PodCourse<AgentId>;

  // `head`: the head pod's agent (the driver, Ray's head), as the pods' are.
  Supervisor(SupervisorSettings settings, const Clock& clock, Outbox& out, AgentId head);
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // --- the pieces, for the views (StatusView) and the shell ---
  const JobSpec& job() const { return settings_.job; }
  const SupervisorSettings& settings() const { return settings_; }
  const std::string& address() const { return address_; }
  const Pods& pods() const { return pods_; }
  JobController& controller() { return controller_; }
  const JobController& controller() const { return controller_; }
  UserCode& code() { return code_; }
  const UserCode& code() const { return code_; }
  const HangCourse& hang() const { return hang_; }
  bool preflight_under_way() const override { return preflight_.has_value(); }
  JobState state() const { return controller_.state(); }
  bool started() const { return state() != JobState::pending; }
  const Clock& clock() const { return clock_; }

  // --- the job's own inputs ---
  // Published at `address` (HOST:PORT): the job begins waiting for its
  // pods (`resumed`: an earlier head's record of it).
  void start(const std::string& address, const os::JobRecord* resumed);
  // Every pod joined (or a restart's pods are back): the course goes on.
  void all_in();
  bool timer(std::int32_t kind, std::int32_t arg);  // false: not one of its timers
  void cancel(const std::string& why) { controller_.cancel(why); }
  void journal_failed(const std::string& why) { controller_.journal_failed(why); }
  // A part of the head the job cannot do without failed (its log writer
  // ended, a log could not be written): the job fails, saying `why`.
  void head_failed(const std::string& why) { controller_.fail(JobEvent::head_failed, why); }
  // An exception in the shell's handler (`reason`: what it was): the state
  // may be half updated, so only what cannot make it worse: the job failed
  // (said, and "Job status:  failed"), every pod's agent and the head's told
  // to shut down with 1, every request still owed answered failed. The shell
  // then hands over the outcome 1 and ends.
  void crashed(const std::string& reason);

  // --- the pods ---
  // `info.pod` joins through `agent`: the answer for the pod (why not; or
  // joined: its heartbeats and its own log lines' stream).
  JoinTerms join(const NodeInfo& info, AgentId agent);
  // `agent`'s actor went down (`words`: how): the pod it is the agent of is
  // lost, or a leaving agent is gone. False: not an agent it knows.
  bool agent_down(AgentId agent, const std::string& words);
  // Only from the pod's own node (the shell checks): told to go (SIGTERM),
  // heard (with its count of GPUs), its GPU watch saw a fault, its ranks'
  // progress (the hang watch's).
  void evicted(const std::string& pod, const std::string& why);
  void on(const PodHeartbeat& heard);
  void on(const PodGpuFault& fault);
  void on(const PodProgress& progress);
  // atlctl delete -p SPEC|all, atlctl taint -a set|remove -n NODES|all: a
  // refusal changes nothing.
  std::optional<Refusal> on(const DeletePods& request);
  std::optional<Refusal> change_taints(const std::string& action, const std::string& nodes);

  // --- user code ---
  // A process's report: a task's, a debug run's, or user code's (the
  // driver, Ray's head, a rank, a Ray node).
  void process_started(const ProcessStarted& started);
  void process_ended(const ProcessExit& exit);
  // Every stream's launch for the active pods; false: the job failed instead.
  bool plan_user_code();
  // Starts user code as attempt code().attempt(): every stream, or the driver alone.
  void launch_user_code(LaunchScope scope = LaunchScope::everything);
  // The log sink told that code().attempt()'s output goes to files of its own
  // (once per attempt, before any line of it).
  void begin_attempt_files();
  void stop_user_code() override;  // SIGTERM (SIGKILL after the grace) to every process
  // Ray mode, parked in a debug state: a Ray node ended (or its pod went),
  // so the rest of the cluster is stopped; recover starts it all again.
  void ray_node_gone_while_parked(const std::string& why);

  // --- the driver's placement groups (driver mode) ---
  // pg_create (its JSON, or why not), pg_wait (answered now, or kept as
  // `reply` until its group is placed, fails, goes or `timeout` passes),
  // pg_remove, cluster_state.
  // `owner`: the driver connection that asked (0: none), whose groups and
  // tasks go when it does (owner_gone), unless disowned (detached).
  Answer create_group(const GroupRequest& request, OwnerId owner = {});
  std::optional<Answer> group_now(std::int64_t id) const;
  void await_group(std::int64_t id, ReplyId reply, Millis timeout);
  // pg_wait as one call: answered now, or kept to `keep()`'s reply (called only then).
  std::optional<Answer> on(const GroupWait& request, const Keep& keep);
  // status -w: the state changes after the watch's last, now, or kept as
  // `keep()`'s reply until the next change or its timeout.
  std::optional<Answer> on(const StateWatch& request, const Keep& keep);
  Answer on(const GroupRemove& request);
  std::string cluster_json() const;
  const PlacementBook& groups() const { return groups_; }

  // --- the driver's tasks ---
  // Why the task cannot start (nothing changed), or nullopt: it starts, its
  // start answered later to `keep()`'s reply (called only then).
  std::optional<Refusal> start_task(const TaskRequest& request, const Keep& keep,
                                    OwnerId owner = {});
  // The detached tasks started again when they end (TaskRequest::restarts).
  const TaskRestarts& restarts() const { return restarts_; }
  // A group or task made detached (lifetime="detached", a detached actor):
  // it outlives `owner`, who made it. Refused for one not `owner`'s.
  std::optional<Refusal> disown(bool group, std::int64_t id, OwnerId owner);
  // `owner`'s connection ended (its process exited or was killed): its
  // placement groups are removed and its tasks stopped, as Ray's.
  void owner_gone(OwnerId owner);
  const Owners& owners() const { return owners_; }
  // task_wait: answered now, or kept as `reply` until the task ends or `timeout`.
  std::optional<task::Answer> task_now(TaskId id, std::int64_t timeout_ms) const;
  void await_task(TaskId id, ReplyId reply, Millis timeout);
  std::optional<task::Answer> on(const TaskWait& request, const Keep& keep);
  std::optional<Refusal> on(const TaskKill& request);
  // A line on a task's control channel ("result <text>" is its result).
  void task_note(TaskId id, const std::string& line);
  // Every task start and task_wait still owed hears `why` (failed).
  void abandon_tasks(const std::string& why);
  const TaskCourse& tasks() const { return tasks_; }

  // --- atlctl's debug commands ---
  StopAnswer begin_stop();
  DebugCourse::StopWait stop_state(StopId op) const { return course_.stop_state(op); }
  void await_stop(StopId op, ReplyId reply) { course_.await_stop(op, reply); }
  // atlctl stop's wait: answered now (no such stop; over, maybe recovered
  // since), or kept to `keep()`'s reply until the stop is done.
  std::optional<Answer> on(const StopWait& request, const Keep& keep);
  // run, check, burn: refused now (the answer), or started (nullopt): the
  // answer, once every rank started, to `keep()`'s reply (called only then).
  std::optional<debug::AnswerRun> on(const RunCommand& request, const Keep& keep);
  std::optional<debug::AnswerRun> on(const NodeToolRequest& request, const Keep& keep);
  // run_wait: answered now, or kept as `reply` until the run ends or `timeout`.
  std::optional<debug::AnswerRun> run_now(RunId id) const;
  void await_run(RunId id, ReplyId reply, Millis timeout);
  std::optional<debug::AnswerRun> on(const RunWait& request, const Keep& keep);
  // recover: refused or failed now, or kept until every rank started.
  std::optional<Answer> on(const Recover& request, const Keep& keep);
  // A line a process wrote on its control channel, forwarded by executor
  // `from`: a task's result, a burn's figure or allreduce hello. True: the
  // Supervisor keeps `from` (a hello waiting for its rendezvous).
  bool process_note(const ProcessNote& note, ExecutorRef from);
  // Every stop, recover, run, task and named actor's call still owed hears
  // `why` (failed).
  void abandon_owed(const std::string& why);
  const Runs& runs() const { return runs_; }
  const DebugCourse& course() const { return course_; }
  // The latest figure of each burn/check per (pod, GPU, metric, size): metrics.
  using BurnFigures = std::map<std::tuple<std::string, int, std::string, std::string>, double>;
  const BurnFigures& burn_figures() const { return burn_figures_; }

  // A long poll's deadline (kGroupWaitTimer, kTaskWaitTimer, kRunWaitTimer,
  // kStateWatchTimer); false: not its.
  bool wait_expired(std::int32_t kind, WaiterId waiter);

  // --- the job's named actors (hosted by any of its processes, called through here) ---
  // `name` hosted by `host` (`has_host`: a handle came), owned by `owner`
  // (for people); refused once the job ended.
  std::optional<Refusal> host_actor(const std::string& name, HostId host, bool has_host,
                                    const std::string& owner);
  // Its host closed `name`: its callers hear so.
  std::optional<Refusal> on(const ActorClose& request);
  // A call of `name`: refused now, or forwarded (nullopt) and answered to
  // `keep()`'s reply (called only then) when the host answers or the call
  // times out.
  std::optional<Refusal> on(const ActorCall& request, const Keep& keep);
  // A host's actor went down (`words`: why); false: no host of a name now.
  bool host_down(HostId host, const std::string& words);
  const NamedActors& named() const { return named_; }

  // --- the web terminals into the pods (the dashboard's relay asks) ---
  // A terminal for `who` into `pod`: refused (one line), or allowed.
  std::variant<Refusal, TerminalOpening> open_terminal(const std::string& pod,
                                                       const std::string& who);
  // Its pod's agent started the shell (in the timeline), or could not
  // (`ok` false: the terminal is gone, unrecorded).
  void terminal_started(TerminalId id, bool ok);
  // The relay's word that a terminal ended and why: once in the timeline.
  void terminal_closed(TerminalId id, const std::string& why);
  const TerminalBook& terminals() const { return terminals_; }

  // --- the answers to its asks (effect::Query), or why none came ---
  // A pre-flight step's answer: the round goes on (a superseded round's: nothing).
  void answered(const PreflightBack& back, const PreflightReply& reply);
  void unanswered(const PreflightBack& back, const NoAnswer& why);
  // One agent's stacks for a look (none: it failed or did not answer in time).
  void answered(const LookBack& back, std::vector<StackReport> reports);
  void unanswered(const LookBack& back, const NoAnswer& why);
  // A named actor's call answered as its host gave it, to its caller; or
  // not: the caller hears it timed out or failed, and why.
  void answered(const CallBack& back, const HostReply& reply);
  void unanswered(const CallBack& back, const NoAnswer& why);
  // A host answered its ping; or did not: it is taken for dead.
  void answered(const PingBack& back, bool);
  void unanswered(const PingBack& back, const NoAnswer& why);

  // --- the hang watch (its input: PodProgress) ---
  // atlctl diagnose: refused now, or answered (diagnose_json) once every
  // pod asked gave its stacks, to `keep()`'s reply (called only then).
  std::optional<Refusal> on(const Diagnose& request, const Keep& keep);

  // --- views ---
  std::vector<PodView> pod_views() const override;  // every worker pod, joined or not
  HangJob hang_job() const;
  ProcessSite head_site() const;
  ProcessSite pod_site(const std::string& pod) const;
  int streams_per_pod() const;
  std::string pod_of_rank(std::int32_t stream) const;
  // The agents of the pods of this attempt's ranks `only` (empty: all).
  std::vector<AgentId> agents_of_ranks(const std::vector<int>& only) const;
  std::optional<AgentId> agent_of(const std::string& pod) const;
  // The pod `agent` is the agent of, or nullopt.
  std::optional<std::string> pod_of_agent(AgentId agent) const;

 private:
  // --- JobEffects: the controller's reads and effects ---
  std::int64_t unix_ms() const override { return clock_.unix_ms(); }
  int attempt() const override { return code_.attempt(); }
  bool user_code_done() const override { return code_.ranks().all_done(); }
  std::string missing_pods() const override { return pods_.registry().missing(); }
  const std::string* machine_of(const std::string& pod) const override {
    return pods_.registry().machine_of(pod);
  }
  void print(const std::string& line) override;
  void save(os::JobRecord record) override;
  void add_event(const TimelineEvent& event) override;
  void reset_journal() override;
  void arm(JobTimer timer, std::chrono::milliseconds delay, std::int32_t tag) override;
  // A restart's attempt: its files begin now, before the line that says so.
  void next_attempt() override {
    code_.next_attempt();
    begin_attempt_files();
  }
  void start_user_code() override;
  void abandon_user_code(const std::string& why) override { code_.end_remaining(why); }
  void start_preflight() override;
  void drop_preflight() override { preflight_.reset(); }
  void end_parked_debug_run() override;
  void end_pod_work(const std::string& pod) override;
  void pod_gone_while_parked(const std::string& detail) override;
  void placement_changed() override;
  std::size_t wind_down(bool ok) override;
  void release(int outcome) override;

  void tick();
  void ping_hosts();
  void answer_callers(NamedActors::Entry& entry, ReplyCode code, const std::string& why);
  void perform(Pods::Effects effects);
  void perform(HangEffects effects);
  PreflightRequest preflight_request(const Preflight::Ask& ask) const;
  // Asks `agents` for their ranks' stacks (none: done at once) for `purpose`.
  void look(LookPurpose purpose, const std::vector<AgentId>& agents,
            const std::vector<std::int32_t>& no_stop);
  void looked(LookPurpose purpose, std::vector<StackReport> reports);
  void perform(TaskEffects effects);
  void perform(FeedEffects effects);
  void perform(PlacementEffects effects);
  // Placement: the joined pods as it sees them, and why it is refused (empty: it is not).
  std::vector<PlacementNode> placement_nodes() const;
  PlacementNodes nodes() const;
  std::string placement_refusal() const;
  void refresh_placement();
  void clear_groups(const std::string& why);
  void kill_tasks(std::int64_t group, const std::string& why);  // 0: every task
  // start_task's work once the caller's word is taken: the task's id, or why not.
  std::variant<Refusal, TaskId> place_task(const TaskRequest& request, const Keep& keep,
                                           OwnerId owner);
  // A task ended: its chain, if any, is armed to start again.
  void task_gone(TaskId id);
  void restart_task(TaskId chain);
  void release_group(std::int64_t group);
  std::string least_loaded_pod() const;
  // The debug half (supervisor_debug.cpp).
  struct RunPlan {
    std::vector<int> ranks;
    std::function<std::string(int, const std::string&)> command_for;  // (rank, pod)
    EnvMap extra_env;
    bool tracked = true;
    std::string label;
    bool node_tool = false;
    bool is_check = false;
    Millis deadline{0};
  };
  DebugView debug_view() const;
  void perform(DebugEffects effects);
  void run_progress(const DebugRun& run);
  void user_code_progress();
  void run_started(const ProcessStarted& started);
  void run_ended(const ProcessExit& exit);
  bool debug_timer(std::int32_t kind, std::int32_t arg);
  void stop_run_on(RunId run, const std::set<std::string>& pods);
  void end_run_everywhere(RunId run);
  std::optional<ProcessLaunch> debug_base(int rank) const;
  std::optional<debug::AnswerRun> launch_run(const RunPlan& plan, const Keep& keep);
  void answer_members(DebugRun& run,
                      const std::function<gpu::RendezvousReply(const RunMember&)>& to);
  void abandon_rendezvous(DebugRun& run, const std::string& why);
  void ask(std::vector<Preflight::Ask> asks);
  GpuView gpu_view(const std::string& pod) const;
  ProcessSite site_at(const std::string& pod, int active_index) const;
  const std::string& master() const;

  SupervisorSettings settings_;
  const Clock& clock_;
  Outbox& out_;
  AgentId head_;         // the head pod's agent: the driver, Ray's head
  std::string address_;  // HOST:PORT, for ATL_ADDRESS
  // The worker pods' comings and goings: expected (workers + spares),
  // joined, lost, each pod's machine; heartbeats and silence.
  Pods pods_;
  // The job's course: lifecycle, restart budget, taints, the active pods,
  // the timeline, the ending. It reaches the rest through this.
  JobController controller_;
  // Its state changes, for status -w (after controller_: it starts from its state).
  StateFeed feed_;
  // User code: each stream's launch, the ranks of the current attempt.
  UserCode code_;
  std::int32_t files_attempt_ = 0;  // the attempt the log sink writes files for
  // The pre-flight round under way (dropped when moot), and the latest round's id.
  std::optional<Preflight> preflight_;
  std::int32_t check_round_ = 0;
  // The hang watch's course (spmd, in command) and each rank's figures.
  HangCourse hang_;
  StackLooks<AgentId, LookPurpose> looks_;
  // The driver's placement groups and tasks, with who waits for them.
  PlacementBook groups_;
  TaskCourse tasks_;
  Owners owners_;  // which driver made each group and task
  TaskRestarts restarts_;
  // atlctl's debug commands: every run not yet ended and the newest
  // finished_kept ended ones, check verdicts, the burns' latest figures;
  // stop, recover and the runs' starts and waits as operations.
  Runs runs_;
  DebugCourse course_;
  BurnFigures burn_figures_;
  std::set<AgentId> leaving_;  // told the job ended, not gone yet
  // The job's named actors: hosts, callers waiting, pings out.
  NamedActors named_;
  // The web terminals open into the pods.
  TerminalBook terminals_;
};

// Whom the Supervisor's ids stand for, kept by the shell (`Handle`: a
// caf::actor there, anything in tests): each joined pod's agent (until
// forgotten) and the head pod's (first), each driver's connection (watched:
// what it made goes when it does), each named actor's host (until
// unwatched), each executor whose process's control line waits for its answer.
template <class Handle>
struct Peers {
  HandleMap<AgentId, Handle> agents;
  HandleMap<OwnerId, Handle> owners;
  HandleMap<HostId, Handle> hosts;
  HandleMap<ExecutorRef, Handle> executors;
  // The handle of `pod`'s agent, or null when it has none (not joined).
  const Handle* agent_of(const Supervisor& sup, const std::string& pod) const {
    auto id = sup.agent_of(pod);
    return id ? agents.find(*id) : nullptr;
  }
};

}  // namespace atl::supervisor
