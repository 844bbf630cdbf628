#include "atl/actors/node_agent.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <caf/all.hpp>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "atl/actors/actor_system_setup.hpp"
#include "atl/actors/dir_check.hpp"
#include "atl/actors/executor.hpp"
#include "atl/actors/exit_words.hpp"
#include "atl/actors/fake_executor.hpp"
#include "atl/actors/terminal_host.hpp"
#include "atl/core/collectives.hpp"
#include "atl/core/failure_detector.hpp"
#include "atl/gpu/gpu_watch.hpp"
#include "atl/gpu/nvml_watch.hpp"
#include "atl/gpu/ticker.hpp"
#include "atl/os/child_process.hpp"
#include "atl/os/flight_recorder.hpp"
#include "atl/os/logging.hpp"
#include "atl/os/machine.hpp"
#include "atl/os/process_sample.hpp"
#include "atl/os/reach_probe.hpp"

namespace atl {

namespace {

// What a rank's flight-recorder hook gets to answer in (a stopped rank never
// does; its stacks say why).
constexpr std::chrono::milliseconds kFlightRecordTimeout{2000};

constexpr auto kRegisterTimeout = std::chrono::seconds(30);
constexpr auto kReachTimeout = std::chrono::seconds(10);
// Below the supervisor's 60 s for the whole check: the answer says why.
constexpr auto kDirCheckTimeout = std::chrono::seconds(30);
// Grace for ranks still running when the node ends without a supervisor's word.
constexpr std::int64_t kOrphanGraceMs = 3000;
// How long a pod told to go (SIGTERM) waits for the head's word (the job's
// grace) before it stops its ranks with kOrphanGraceMs.
constexpr auto kEvictionAnswerTimeout = std::chrono::seconds(5);
// How long the head may take to answer for one chunk of kept output.
constexpr auto kKeptOutputTimeout = std::chrono::seconds(10);
// The ranks' progress is sampled this often (the hang watch's figures).
constexpr auto kSampleInterval = std::chrono::seconds(1);

// The pod's GPUs looked at through NVML once a second, on a thread of its
// own: an NVML call on a broken GPU can block for seconds, and opening NVML
// takes a while on a large machine. A fault goes to the agent, which tells
// the head; a machine without NVML (or without GPUs) is not watched.
class GpuWatchThread {
 public:
  explicit GpuWatchThread(caf::actor_addr agent)
      : agent_(std::move(agent)),
        ticker_(
            std::chrono::seconds(1), [this] { tick(); }, true) {}

  // In a line, for a diagnosis: what is watched and what was found.
  std::string summary() const {
    std::lock_guard<std::mutex> lock(mu_);
    return summary_;
  }

 private:
  void say(std::string text) {
    std::lock_guard<std::mutex> lock(mu_);
    summary_ = std::move(text);
  }

  void tick() {
    if (closed_) return;
    if (!nvml_) {
      std::string why;
      nvml_ = gpu::NvmlWatcher::open(why);
      auto log = component_logger("node");
      if (!nvml_) {
        closed_ = true;
        log->debug("GPU watch off: {}", why);
        say("not watched: " + why);
        return;
      }
      say(std::to_string(nvml_->gpus()) + " GPUs watched through NVML, no fault");
      log->info("watching {} GPUs through NVML (Xid events, ECC, row remaps)", nvml_->gpus());
      if (!nvml_->note().empty()) log->warn("{}", nvml_->note());
    }
    auto verdict = watch_.observe(nvml_->look());
    for (const auto& note : verdict.notes) component_logger("node")->warn("{}", note.text);
    for (const auto& fault : verdict.faults) {
      faults_ += (faults_.empty() ? "" : "; ") + fault.reason;
      say(faults_);
      if (auto agent = caf::actor_cast<caf::actor>(agent_))
        caf::anon_send(agent, gpu_fault_atom::value, fault.reason,
                       static_cast<std::int32_t>(fault.xid));
    }
  }

  caf::actor_addr agent_;
  mutable std::mutex mu_;
  std::string summary_ = "GPU watch starting";  // guarded by mu_
  std::string faults_;                          // the ticker's own
  bool closed_ = false;
  std::unique_ptr<gpu::NvmlWatcher> nvml_;
  gpu::GpuFaultWatch watch_;
  gpu::Ticker ticker_;  // last: ticks once the rest is set
};

struct NodeAgentState {
  ~NodeAgentState() {
    if (forwarding_log) set_log_forwarder({});  // the sink it named may be gone with the head
  }
  bool forwarding_log = false;
  NodeAgentConfig config;
  caf::actor supervisor;
  caf::actor sink;  // the head's, from its answer to the join: the processes' output
  std::shared_ptr<std::atomic<int>> exit_code;
  struct Running {
    StreamId stream;
    std::int32_t attempt = 0;
    std::shared_ptr<ProcessMeter> meter;  // user code's ranks: for the hang watch
    std::int64_t progress_mtime_ns = 0;   // its $ATL_PROGRESS_FILE's, at the last sample
    std::int64_t steps = 0;               // how often that changed
    std::int64_t warn_ms = 0;             // its stop warning's lead (--stop-signal)
  };
  std::map<caf::actor, Running> executors;
  bool ending = false;
  bool evicting = false;  // told to go (SIGTERM): the head is being told
  // Liveness, once joined: heartbeats both ways at the head's interval; the
  // head silent for its timeout means it is lost. The lease tells this node's
  // ranks' guards that we are alive and in touch (renewed at each heartbeat).
  std::chrono::milliseconds heartbeat_interval{0};
  std::chrono::steady_clock::time_point last_tick;  // to notice this node's own stalls
  bool sampling = false;  // the sample timer runs (armed once, at the first join)
  FailureDetector head{std::chrono::seconds(3)};
  std::shared_ptr<os::Lease> lease;
  os::ProbeSlot probe;                        // the pre-flight's network check, while it runs
  std::unique_ptr<GpuWatchThread> gpu_watch;  // once joined
  caf::actor terminals;  // the web terminals' host, linked, once the first is asked for
  // Until then a rank's stop ('T': gdb's attach, ptrace) may be this node's
  // own diagnosis: the hang watch is not told of it (it blamed its own stop).
  std::chrono::steady_clock::time_point diagnosing_until{};
  std::int64_t kept_bytes_sent = 0;  // output kept through a loss of the head, sent since joining
  // Its processes' starts and ends not yet sent to the head (ProcessReports):
  // sent once the mailbox's turn that brought them is over (a flush_atom to
  // itself, queued behind them), before a control line, and before it quits.
  ProcessReports reports;
  bool flush_queued = false;
};

using NodeAgentActor = caf::stateful_actor<NodeAgentState>;

// Simulated ranks (--fake-ranks) have no process: their stacks are canned,
// read from $ATL_FAKE_STACKS (rank-N.txt, else default.txt, as py-spy prints
// them), so that the head's side of a diagnosis can be measured at scale
// (bench/hang). Without it they have none, and say so.
std::vector<StackReport> fake_stacks(const NodeAgentState& st) {
  const char* dir = std::getenv("ATL_FAKE_STACKS");
  auto read = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const std::optional<std::string> fallback =
      dir ? read(std::string(dir) + "/default.txt") : std::nullopt;
  std::vector<StackReport> out;
  for (const auto& [e, running] : st.executors) {
    if (running.stream.kind != StreamKind::rank) continue;
    StackReport r;
    r.rank = running.stream.rank;
    r.attempt = running.attempt;
    r.state = 'S';
    auto text =
        dir ? read(std::string(dir) + "/rank-" + std::to_string(r.rank) + ".txt") : std::nullopt;
    if (!text) text = fallback;
    if (text) {
      r.tool = "py-spy";
      r.text = std::move(*text);
    } else {
      r.error = "a simulated rank has no stack ($ATL_FAKE_STACKS unset)";
    }
    out.push_back(std::move(r));
  }
  return out;
}

constexpr const char* kHead = "head";

// The starts and ends gathered so far, to the head, in one message.
void flush_reports(NodeAgentActor* self) {
  auto& st = self->state;
  st.flush_queued = false;
  if (st.reports.empty()) return;
  st.reports.pod = st.config.info.pod;
  self->send(st.supervisor, std::move(st.reports));
  st.reports = {};
}

void quit_node(NodeAgentActor* self) {
  flush_reports(self);  // its ranks' last ends are not lost with it
  self->quit();
}

ProcessReports& gather_reports(NodeAgentActor* self) {
  auto& st = self->state;
  if (!st.flush_queued) {
    st.flush_queued = true;
    self->send(self, flush_atom::value);
  }
  return st.reports;
}

// Stops every rank and quits once they are all gone (or after a deadline).
void end_node(NodeAgentActor* self, int code, std::int64_t grace_ms) {
  auto& st = self->state;
  if (!st.ending) st.exit_code->store(code);
  st.ending = true;
  st.head.forget(kHead);
  if (st.executors.empty()) {
    quit_node(self);
    return;
  }
  std::int64_t lead = 0;  // the longest stop warning among them comes first
  for (const auto& [e, running] : st.executors) {
    self->send(e, stop_atom::value, grace_ms);
    lead = std::max(lead, running.warn_ms);
  }
  self->delayed_send(self, std::chrono::milliseconds(lead + grace_ms + 5000), timeout_atom::value);
}

// User code, a debug run's ranks (atlctl run/check/burn) or a task: each
// launch's stream says which.
// Ray mode: the pod's shells (its web terminal) get the job's Ray address
// and token as its Ray node has them, so that `ray status` there is this
// job's Ray, whatever else runs on the host.
void with_rays_address_in_shells(NodeAgentActor* self, const std::vector<ProcessLaunch>& ranks) {
  EnvMap shell = env_from_strings(self->state.config.shell_env);
  bool ray = false;
  for (const auto& launch : ranks)
    for (const auto& [name, value] : env_from_strings(launch.env))
      if (name == "RAY_ADDRESS" || name == "RAY_AUTH_MODE" || name == "RAY_AUTH_TOKEN") {
        shell[name] = value;
        ray = true;
      }
  if (!ray) return;
  auto& env = self->state.config.shell_env;
  env = to_env_strings(shell);
  if (self->state.terminals) self->send(self->state.terminals, term_env_atom::value, env);
}

// Joined: this process's own log lines go to the head's log directory too
// (`stream`: logs/pod-worker-<i>.log; never logging from in there).
void forward_log_to_head(NodeAgentActor* self, const StreamId& stream) {
  auto& st = self->state;
  if (!st.config.forward_log || !st.sink) return;
  st.forwarding_log = true;
  set_log_forwarder([sink = st.sink, stream](const std::string& line) {
    caf::anon_send(sink, log_atom::value, stream, line + "\n", std::int32_t{1});
  });
}

void start_executors(NodeAgentActor* self, const std::vector<ProcessLaunch>& ranks,
                     const caf::actor& sink) {
  auto& st = self->state;
  if (st.ending) return;
  // Their starts and ends come here, to go to the head a batch at a time.
  const auto reports_to = caf::actor_cast<caf::actor>(self);
  for (const auto& launch : ranks) {
    // A rank's pid and output lines are read for the hang watch.
    auto meter = launch.stream.kind == StreamKind::rank && !st.config.fake_ranks
                     ? std::make_shared<ProcessMeter>()
                     : nullptr;
    if (meter) {
      const std::string& pod = st.config.info.pod;
      meter->progress_file = process_tmp_path("atl-progress-", pod, launch);
      meter->error_file = process_tmp_path("atl-error-", pod, launch, ".json");
      meter->flight_recorder_dir = process_tmp_path("atl-fr-", pod, launch);
    }
    auto exec =
        st.config.fake_ranks
            ? spawn_fake_executor(self->system(), launch, st.config.info.pod, sink, reports_to)
            : spawn_executor(self->system(), launch, st.config.info.pod, sink, reports_to, st.lease,
                             meter, st.config.unsent);
    self->monitor(exec);
    st.executors.emplace(
        exec, NodeAgentState::Running{launch.stream, launch.attempt, meter, 0, 0, launch.warn_ms});
  }
}

// Stops user code's processes (run: nothing), or those of one debug run or task.
void stop_executors(NodeAgentActor* self, const std::optional<StreamId>& run,
                    std::int64_t grace_ms) {
  for (const auto& [e, r] : self->state.executors)
    if (run ? r.stream.in_run_of(*run) : r.stream.is_user_code())
      self->send(e, stop_atom::value, grace_ms);
}

// The executors hold what their ranks wrote and the head did not
// acknowledge (UnsentOutput) rather than wait for acks that will not come.
void hold_unsent_output(NodeAgentActor* self) {
  for (const auto& [e, running] : self->state.executors) self->send(e, sink_lost_atom::value);
}

// The head is lost (silent too long, its connection gone, or it cannot take
// this node now): workernode is to rejoin it, and the ranks' unacknowledged
// output is held for that rejoin. Every way to a lost head goes through here.
void head_is_lost(NodeAgentActor* self) {
  if (self->state.config.head_lost) self->state.config.head_lost->store(true);
  hold_unsent_output(self);
}

// Output this pod kept through its loss of the head (UnsentOutput), to the
// head that took it again: one chunk at a time, each answered; a chunk not
// answered is kept for the next rejoin.
void send_kept_output(NodeAgentActor* self) {
  auto& st = self->state;
  if (!st.config.unsent || st.ending) return;
  auto taken = st.config.unsent->take();
  if (!taken) {
    if (st.kept_bytes_sent > 0) {
      component_logger("node")->info(
          "sent the head {} bytes of its ranks' output kept through the loss of the head",
          st.kept_bytes_sent);
    }
    if (const auto dropped = st.config.unsent->dropped_bytes(); dropped > 0) {
      component_logger("node")->warn(
          "{} bytes of its ranks' output were lost: more than {} MiB waited for the head", dropped,
          UnsentOutput::kDefaultLimit >> 20);
    }
    return;
  }
  auto chunk = std::make_shared<UnsentChunk>(std::move(*taken));
  self->request(st.supervisor, kKeptOutputTimeout, KeptOutput{*chunk, st.config.info.pod})
      .then(
          [self, chunk](bool taken_there) {
            if (taken_there) {
              self->state.kept_bytes_sent += static_cast<std::int64_t>(chunk->bytes.size());
            } else {
              component_logger("node")->warn("the head refused {} bytes of {}'s kept output",
                                             chunk->bytes.size(), stream_name(chunk->stream));
            }
            send_kept_output(self);
          },
          [self, chunk](const caf::error& err) {
            component_logger("node")->warn(
                "kept output not sent ({}): it waits for the next contact with the head",
                error_words(err, self->system()));
            self->state.config.unsent->give_back(std::move(*chunk));
          });
}

// The head said this pod is gone (silent too long, or deleted): its ranks die
// now (the revoked lease makes every guard kill its tree) and the node leaves.
void leave_at_once(NodeAgentActor* self, int code) {
  auto& st = self->state;
  if (st.lease) st.lease->revoke();
  end_node(self, code, 0);
}

// Once a second, on a timer of its own (sample_atom), never inside the
// heartbeat's tick (a pass over /proc costs ~5 ms per thousand processes,
// and a read can wait on a process's memory lock): each running rank's
// progress (its output lines, and from one pass over /proc its tree's CPU
// time, I/O and most telling state) for the supervisor's hang watch.
void report_progress(NodeAgentActor* self) {
  auto& st = self->state;
  if (st.ending) return;
  self->delayed_send(self, kSampleInterval, sample_atom::value);
  const auto now = std::chrono::steady_clock::now();
  std::vector<NodeAgentState::Running*> ranks;
  for (auto& [e, running] : st.executors)
    if (running.meter && running.meter->pid.load() > 0) ranks.push_back(&running);
  if (ranks.empty()) return;
  const os::ProcessTable table = os::read_process_table();
  const os::ChildIndex children = os::child_index(table);  // once for every rank
  std::vector<ProgressReport> reports;
  reports.reserve(ranks.size());
  for (auto* r : ranks) {
    const os::TreeSample tree =
        os::sample_tree(table, children, r->meter->pid.load(), os::live_facts());
    if (tree.processes == 0) continue;  // ended: its exit report says so
    // An explicit signal: the rank touched its $ATL_PROGRESS_FILE.
    struct stat file {};
    if (::stat(r->meter->progress_file.c_str(), &file) == 0) {
      const std::int64_t mtime =
          static_cast<std::int64_t>(file.st_mtim.tv_sec) * 1000000000 + file.st_mtim.tv_nsec;
      if (r->progress_mtime_ns != 0 && mtime != r->progress_mtime_ns) ++r->steps;
      r->progress_mtime_ns = mtime;
    }
    const pid_t user = os::user_process(table, children, r->meter->pid.load());
    const char state = tree.state == 'T' && now < st.diagnosing_until ? 'S' : tree.state;
    reports.push_back({r->stream.rank, r->attempt, r->meter->lines.load(), r->steps, tree.cpu_ticks,
                       static_cast<std::int8_t>(state), static_cast<std::int32_t>(user),
                       tree.rss_bytes, tree.io_bytes});
  }
  if (!reports.empty())
    self->send<caf::message_priority::high>(st.supervisor,
                                            PodProgress{st.config.info.pod, std::move(reports)});
}

// Every heartbeat interval: the head silent too long is lost; else our
// heartbeat goes out and the lease is renewed.
void heartbeat_tick(NodeAgentActor* self) {
  auto& st = self->state;
  if (st.ending) {
    // Its ranks stopping within their grace (an eviction, the job's end) may
    // take longer than the head's timeout: this node is alive and says so
    // to their guards until they are gone (a revoked lease stays revoked).
    if (st.lease && !st.executors.empty() && st.heartbeat_interval.count() > 0) {
      st.lease->renew();
      self->delayed_send<caf::message_priority::high>(self, st.heartbeat_interval,
                                                      tick_atom::value);
    }
    return;
  }
  auto now = std::chrono::steady_clock::now();
  // This node's own stall (its tick came late) is not the head's silence.
  if (st.last_tick != std::chrono::steady_clock::time_point{}) {
    auto late = std::chrono::duration_cast<std::chrono::milliseconds>(now - st.last_tick -
                                                                      st.heartbeat_interval);
    if (late > st.heartbeat_interval) st.head.excuse(late, now);
  }
  st.last_tick = now;
  if (!st.head.expire(now).empty()) {
    component_logger("node")->error(
        "lost the head at {}:{}: no word from it for {}: killing this node's ranks and leaving",
        st.config.head_host, st.config.head_port, format_duration(st.head.timeout()));
    head_is_lost(self);
    leave_at_once(self, kNodeExitHeadLost);
    return;
  }
  if (st.lease) st.lease->renew();
  // With the heartbeat: how many of the GPUs this pod declared are still
  // there (-1: it declared none), so the head notices one that disappears.
  const std::int32_t gpus = st.config.info.gpus > 0 ? os::count_gpu_devices() : -1;
  // High priority: never queued behind the rank reports of a busy head.
  self->send<caf::message_priority::high>(st.supervisor, PodHeartbeat{st.config.info.pod, gpus});
  self->delayed_send<caf::message_priority::high>(self, st.heartbeat_interval, tick_atom::value);
}

// The pre-flight's probe: a listener the ring's connects may reach (its port).
PreflightReply open_probe(NodeAgentActor* self) {
  auto opened = self->state.probe.open(self->state.config.info.address);
  if (!opened) return {opened.error(), -1};
  // Open while the ring's connects may come: the node checks run beside
  // the ring (preflight.hpp), so it closes at the launch, at the next
  // round's probe, or after the ring's time (this one's: by its number,
  // never by its port), whichever is first.
  self->delayed_send(self, kReachTimeout + std::chrono::seconds(5), probe_atom::value,
                     static_cast<std::int64_t>(opened->id));
  return {std::string(), opened->port};
}

// The ring's connect to another pod's probe at host:port.
caf::result<PreflightReply> reach_pod(NodeAgentActor* self, const std::string& host,
                                      std::int32_t port) {
  // Up to kReachTimeout on a thread of its own, not a scheduler's: a
  // detached actor, which the actor system waits for (a detached
  // std::thread holding the promise could outlive the system).
  auto answer = self->make_response_promise<PreflightReply>();
  auto prober = self->spawn<caf::detached>([]() -> caf::behavior {
    return {[](reach_atom, const std::string& to, std::int32_t at) -> std::string {
      auto reached = os::probe_connect(to, static_cast<std::uint16_t>(at), kReachTimeout);
      return reached ? std::string() : reached.error();
    }};
  });
  self->request(prober, kReachTimeout + std::chrono::seconds(5), reach_atom::value, host, port)
      .then(
          [answer, prober](const std::string& problem) mutable {
            caf::anon_send_exit(prober, caf::exit_reason::user_shutdown);
            answer.deliver(PreflightReply{problem});
          },
          [self, answer, prober](const caf::error& err) mutable {
            caf::anon_send_exit(prober, caf::exit_reason::user_shutdown);
            answer.deliver(PreflightReply{"the reach probe did not answer: " +
                                          error_words(err, self->system())});
          });
  return answer;
}

// The pod's own check: its working dir (on a checker of its own), the GPUs
// it declares, the way back to the head.
caf::result<PreflightReply> check_pod(NodeAgentActor* self, const std::string& working_dir) {
  PreflightRequest dir{PreflightRequest::check, {}, 0, working_dir};
  if (dir.working_dir.empty()) {
    char cwd[4096];
    dir.working_dir = ::getcwd(cwd, sizeof cwd) ? cwd : ".";
  }
  auto answer = self->make_response_promise<PreflightReply>();
  auto say = [answer](std::string problem) mutable { answer.deliver(PreflightReply{problem}); };
  // The dir on a checker of its own: a hung mount must not stall this
  // agent (its heartbeats, its ranks' reports) inside this handler.
  auto checker = spawn_dir_checker(self->system());
  self->request(checker, kDirCheckTimeout, dir)
      .then(
          [self, say, checker](const PreflightReply& reply) mutable {
            caf::anon_send_exit(checker, caf::exit_reason::user_shutdown);
            if (!reply.problem.empty()) return say(reply.problem);
            // The GPUs this pod declares are really there (the driver's
            // device nodes: no CUDA needed).
            const int declared = self->state.config.info.gpus;
            const int found = declared > 0 ? os::count_gpu_devices() : 0;
            if (found < declared)
              return say("the pod declares " + std::to_string(declared) + " GPUs but " +
                         std::to_string(found) + " GPU devices (/dev/nvidiaN) are there");
            // Reaching the head: a round trip to the supervisor over this
            // node's own connection, the path every later message takes.
            self->request(self->state.supervisor, kReachTimeout, status_atom::value)
                .then([say](const std::string&) mutable { say(std::string()); },
                      [self, say](const caf::error& err) mutable {
                        say("cannot reach the head: " + error_words(err, self->system()));
                      });
          },
          [self, say, checker, dir](const caf::error& err) mutable {
            caf::anon_send_exit(checker, caf::exit_reason::user_shutdown);
            say("the check of working dir " + dir.working_dir +
                " did not finish: " + error_words(err, self->system()));
          });
  return answer;
}

caf::behavior node_agent(NodeAgentActor* self, caf::actor supervisor, NodeAgentConfig config,
                         std::shared_ptr<std::atomic<int>> exit_code) {
  auto& st = self->state;
  st.config = std::move(config);
  st.supervisor = std::move(supervisor);
  st.exit_code = std::move(exit_code);
  auto log = component_logger("node");

  self->monitor(st.supervisor);
  self->set_exception_handler([self](caf::scheduled_actor*, std::exception_ptr& e) -> caf::error {
    component_logger("node")->critical("node agent failed: {}: ending this node",
                                       describe_exception(e));
    // Executors end their process groups when they quit: nothing outlives us.
    for (const auto& [exec, running] : self->state.executors)
      self->send_exit(exec, caf::exit_reason::kill);
    self->state.exit_code->store(1);
    return caf::exit_reason::unhandled_exception;
  });
  self->set_down_handler([self](const caf::down_msg& msg) {
    auto& st = self->state;
    if (msg.source == st.supervisor.address()) {
      if (!st.ending) {
        component_logger("node")->error("lost the head at {}:{}: ending this node",
                                        st.config.head_host, st.config.head_port);
        head_is_lost(self);
      } else {
        hold_unsent_output(self);  // ending anyway: no rejoin, but nothing waits on acks
      }
      end_node(self, kNodeExitHeadLost, kOrphanGraceMs);
      return;
    }
    auto it = st.executors.find(caf::actor_cast<caf::actor>(msg.source));
    if (it == st.executors.end()) return;
    if (msg.reason != caf::exit_reason::normal && !st.ending) {
      // An executor that died (no thread for its pump, an exception) never
      // reported its rank: report it failed, or the job would wait forever.
      std::string why = "its executor on " + st.config.info.pod +
                        " ended: " + exit_words(msg.reason, self->system());
      component_logger("node")->error("{}: {}", stream_name(it->second.stream), why);
      gather_reports(self).ended.push_back(
          ProcessExit{it->second.stream, it->second.attempt, st.config.info.pod, 255, 0, why, ""});
    }
    st.executors.erase(it);
    if (st.ending && st.executors.empty()) quit_node(self);
  });

  self->request(st.supervisor, kRegisterTimeout, register_atom::value, st.config.info,
                caf::actor_cast<caf::actor>(self))
      .then(
          [self](JoinReply& reply) {
            auto log = component_logger("node");
            auto& st = self->state;
            const JoinTerms& terms = reply.terms;
            const std::string& refusal = terms.refusal;
            if (refusal.empty() && !st.ending) {
              st.sink = std::move(reply.sink);
              forward_log_to_head(self, terms.log_stream);  // from its first line on
              log->info("joined the job as {}", st.config.info.pod);
              if (st.config.joined) st.config.joined->store(true);
              HeartbeatOptions hb{std::chrono::milliseconds(terms.heartbeat_interval_ms),
                                  std::chrono::milliseconds(terms.heartbeat_timeout_ms)};
              if (auto ok = validate_heartbeats(hb); !ok) {
                log->error("the head sent unusable heartbeat settings: {}", ok.error());
                end_node(self, kNodeExitRejected, 0);
                return;
              }
              auto lease = os::Lease::create(hb.timeout);
              if (!lease) {
                log->error("cannot make this node's lease: {}", lease.error());
                end_node(self, kNodeExitHeadLost, 0);
                return;
              }
              st.lease = std::move(lease).value();
              st.heartbeat_interval = hb.interval;
              st.head = FailureDetector(hb.timeout);
              st.head.watch(kHead, std::chrono::steady_clock::now());
              heartbeat_tick(self);
              if (!st.sampling) {
                st.sampling = true;
                report_progress(self);
              }
              if (st.config.watch_gpus)
                st.gpu_watch = std::make_unique<GpuWatchThread>(self->address());
              send_kept_output(self);
              return;
            }
            if (refusal.empty()) return;
            if (terms.retry) {
              // The head still counts this pod's earlier self (a one-sided
              // partition): it declares it lost within its timeout; join again.
              log->warn("the head refused this node for now ({}): joining again", refusal);
              head_is_lost(self);
              end_node(self, kNodeExitHeadLost, 0);
              return;
            }
            log->error("the head refused this node: {}", refusal);
            end_node(self, kNodeExitRejected, 0);
          },
          [self](const caf::error& err) {
            component_logger("node")->error("registration failed: {}",
                                            error_words(err, self->system()));
            head_is_lost(self);
            end_node(self, kNodeExitHeadLost, 0);
          });

  return {
      // Its executors' reports (they report here): gathered, then sent in one.
      [self](ProcessStarted& started) {
        gather_reports(self).started.push_back(std::move(started));
      },
      [self](ProcessExit& exit) { gather_reports(self).ended.push_back(std::move(exit)); },
      [self](flush_atom) { flush_reports(self); },
      // A control line goes as it came (the head answers its executor, the
      // sender kept), after the reports before it: never ahead of its start.
      [self](ProcessNote& note) {
        flush_reports(self);
        self->delegate(self->state.supervisor, std::move(note));
      },
      // The pre-flight's requests (preflight.hpp), each answered with a PreflightReply.
      [self](const PreflightRequest& r) -> caf::result<PreflightReply> {
        switch (r.step) {
          case PreflightRequest::probe:
            return open_probe(self);
          case PreflightRequest::reach:
            return reach_pod(self, r.host, r.port);
          case PreflightRequest::check:
            return check_pod(self, r.working_dir);
          default:
            return PreflightReply{"this pod takes no pre-flight step " + std::to_string(r.step)};
        }
      },
      // A web terminal into this pod (terminal_host.hpp): its host answers.
      [self](term_open_atom a, std::int64_t id, std::int32_t rows, std::int32_t cols,
             caf::actor sink) {
        auto& st = self->state;
        if (!st.terminals) {
          st.terminals = spawn_terminal_host(
              self->system(), TerminalHostConfig{st.config.info.pod, st.config.shell_env});
          self->link_to(st.terminals);
        }
        return self->delegate(st.terminals, a, id, rows, cols, std::move(sink));
      },
      // Its ranks' stacks; `no_stop`: ranks the head's watch sees computing:
      // their stacks only if reading them stops nothing (py-spy), never gdb's attach.
      [self](const StackRequest& request) -> caf::result<std::vector<StackReport>> {
        const auto& no_stop = request.no_stop;
        const std::string gpus = self->state.gpu_watch ? self->state.gpu_watch->summary()
                                                       : std::string("not watched on this pod");
        if (self->state.config.fake_ranks) {
          auto reports = fake_stacks(self->state);
          for (auto& r : reports) r.gpus = gpus;
          return reports;
        }
        // Every running rank's stack, taken in parallel on a detached actor
        // (py-spy, gdb: helper processes, never on a scheduler's thread).
        struct Target {
          StreamId stream;
          std::int32_t attempt;
          pid_t pid;
          std::string flight_recorder_dir;
          bool may_stop;
        };
        std::vector<Target> targets;
        for (const auto& [e, running] : self->state.executors)
          if (running.meter && running.meter->pid.load() > 0)
            targets.push_back(
                {running.stream, running.attempt, running.meter->pid.load(),
                 running.meter->flight_recorder_dir,
                 std::find(no_stop.begin(), no_stop.end(), running.stream.rank) == no_stop.end()});
        const auto timeout =
            std::chrono::milliseconds(std::clamp<std::int64_t>(request.budget_ms, 1, 60000));
        auto collector = self->spawn<caf::detached>([targets, timeout]() -> caf::behavior {
          return {[targets, timeout](diagnose_atom) {
            const os::ProcessTable table = os::read_process_table();
            const os::ChildIndex children = os::child_index(table);
            std::vector<std::future<StackReport>> taking;
            for (const auto& t : targets)
              taking.push_back(std::async(std::launch::async, [&table, &children, t, timeout] {
                StackReport r;
                r.rank = t.stream.rank;
                r.attempt = t.attempt;
                r.state = static_cast<std::int8_t>(os::sample_tree(table, children, t.pid).state);
                // Its flight record first (an answer in milliseconds from a
                // rank whose hook runs), then its stacks.
                if (!t.flight_recorder_dir.empty()) {
                  const pid_t main = os::user_process(table, children, t.pid);
                  auto record = os::take_flight_record(t.flight_recorder_dir, main,
                                                       std::min(timeout, kFlightRecordTimeout));
                  auto parsed = record ? parse_flight_record(*record)
                                       : Expected<RankCollectives>(make_error(record.error()));
                  if (parsed)
                    r.collectives = to_json(*parsed);
                  else
                    r.collectives_error = parsed.error();
                  if (record && record->size() <= kMaxRawFlightRecord) r.flight_record = *record;
                } else {
                  r.collectives_error = "the flight recorder is off for this job";
                }
                os::StackCapture c = os::capture_stack(table, children, t.pid, timeout, t.may_stop);
                r.tool = std::move(c.tool);
                r.text = std::move(c.text);
                r.error = std::move(c.error);
                r.helper_pids.assign(c.helpers.begin(), c.helpers.end());
                r.helper_texts = std::move(c.helper_texts);
                return r;
              }));
            std::vector<StackReport> out;
            for (auto& f : taking) out.push_back(f.get());
            return out;
          }};
        });
        auto answer = self->make_response_promise<std::vector<StackReport>>();
        // gdb stops what it attaches to: those stops are this diagnosis's,
        // until a moment after it is over.
        constexpr auto kAfterDiagnosis = std::chrono::seconds(2);
        self->state.diagnosing_until =
            std::chrono::steady_clock::now() + timeout + std::chrono::seconds(10) + kAfterDiagnosis;
        auto done = [self, kAfterDiagnosis] {
          self->state.diagnosing_until = std::chrono::steady_clock::now() + kAfterDiagnosis;
        };
        self->request(collector, timeout + std::chrono::seconds(10), diagnose_atom::value)
            .then(
                [answer, collector, gpus, done](std::vector<StackReport>& reports) mutable {
                  done();
                  caf::anon_send_exit(collector, caf::exit_reason::user_shutdown);
                  for (auto& r : reports) r.gpus = gpus;
                  answer.deliver(std::move(reports));
                },
                [answer, collector, done](const caf::error&) mutable {
                  done();
                  caf::anon_send_exit(collector, caf::exit_reason::user_shutdown);
                  answer.deliver(std::vector<StackReport>{});
                });
        return answer;
      },
      [self](probe_atom, std::int64_t id) {  // the ring's time is over
        self->state.probe.expire(static_cast<std::uint64_t>(id));
      },
      [self](agent_order::Launch& order) {
        self->state.probe.close();  // the pre-flight is over
        with_rays_address_in_shells(self, order.ranks);
        start_executors(self, order.ranks, self->state.sink);
      },
      [self](const agent_order::Run& order) {
        start_executors(self, order.ranks, self->state.sink);
      },
      [self](const agent_order::StopRanks& order) {
        stop_executors(self, std::nullopt, order.grace_ms);
      },
      [self](const agent_order::StopStream& order) {
        stop_executors(self, order.stream, order.grace_ms);
      },
      [self](const agent_order::Shutdown& order) { end_node(self, order.code, kOrphanGraceMs); },
      [self](heartbeat_atom) { self->state.head.heard(kHead, std::chrono::steady_clock::now()); },
      [self](tick_atom) { heartbeat_tick(self); },
      [self](sample_atom) { report_progress(self); },
      [self](gpu_fault_atom, const std::string& reason, std::int32_t xid) {
        // The head taints this machine and deletes this pod (its GPU cannot
        // be trusted again); the job restarts without it.
        auto& st = self->state;
        component_logger("node")->error("GPU fault: {}: telling the head", reason);
        if (!st.ending) self->send(st.supervisor, PodGpuFault{st.config.info.pod, reason, xid});
      },
      [self](const agent_order::Fence& order) {
        component_logger("node")->error(
            "the head declared this pod lost ({}): killing its "
            "ranks and leaving",
            order.why);
        leave_at_once(self, kNodeExitHeadLost);
      },
      // The head removes this pod (atlctl delete, or a GPU gone): it leaves
      // to be recreated. `why` says which (it always said "atlctl delete").
      [self](const agent_order::Delete& order) {
        component_logger("node")->warn("removed from the job ({}): killing its ranks and leaving",
                                       order.why);
        leave_at_once(self, kNodeExitDeleted);
      },
      [self](cancel_atom) {
        // Kubernetes' word for "this pod goes" (a deletion, an eviction, a
        // drain): the head takes it as a lost pod (a counted restart, on a
        // spare or once the pod is back), never as its ranks failing, and
        // answers with the job's grace, which the ranks get.
        auto& st = self->state;
        if (st.ending || st.evicting) return;
        st.evicting = true;
        component_logger("node")->warn(
            "told to go (SIGTERM): telling the head, then stopping ranks within the job's grace");
        self->request(st.supervisor, kEvictionAnswerTimeout, evicted_atom::value,
                      st.config.info.pod, std::string("SIGTERM"))
            .then(
                [self](std::int64_t grace_ms) { end_node(self, kNodeExitSignalled, grace_ms); },
                [self](const caf::error&) { end_node(self, kNodeExitSignalled, kOrphanGraceMs); });
      },
      [self](timeout_atom) {
        // Ranks that did not stop in time: exiting the executors kills their groups.
        for (const auto& [e, running] : self->state.executors)
          self->send_exit(e, caf::exit_reason::kill);
        quit_node(self);
      },
  };
}

}  // namespace

caf::actor spawn_node_agent(caf::actor_system& sys, caf::actor supervisor, NodeAgentConfig config,
                            std::shared_ptr<std::atomic<int>> exit_code) {
  return sys.spawn(node_agent, std::move(supervisor), std::move(config), std::move(exit_code));
}

}  // namespace atl
