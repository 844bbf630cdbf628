#include "atl/actors/executor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <caf/all.hpp>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "atl/core/duration.hpp"
#include "atl/core/env.hpp"
#include "atl/core/error_file.hpp"
#include "atl/os/child_process.hpp"
#include "atl/os/control_channel.hpp"
#include "atl/os/flight_recorder.hpp"
#include "atl/os/logging.hpp"
#include "atl/os/oom_kills.hpp"
#include "atl/os/output_pump.hpp"
#include "atl/os/process_sample.hpp"

namespace atl {

namespace {

// Chunks in flight from one process to the sink before the pump waits for acks.
constexpr int kAckWindow = 8;

struct ExecutorState {
  ProcessLaunch launch;
  std::string pod;
  caf::actor report_to;
  pid_t pid = -1;
  bool exited = false;
  bool tree_killed = false;  // the guard was told to kill everything
  // The stop's SIGTERM went out: a later stop (the node ending, the head's
  // stop after an agent's) sends no second one, and the first grace stands.
  bool term_sent = false;
  // The stop warning (--stop-signal) went out; its SIGTERM is due then.
  std::optional<std::chrono::steady_clock::time_point> warned_until;
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  // The node lost its head: the pump holds output for the rejoin (sink_lost_atom).
  std::shared_ptr<std::atomic<bool>> sink_gone = std::make_shared<std::atomic<bool>>(false);
  std::thread pump;
  int control_fd = -1;  // our end of the process's control channel
  std::thread control_reader;
  std::shared_ptr<std::atomic<bool>> control_done = std::make_shared<std::atomic<bool>>(false);

  ~ExecutorState() {
    // Reached when the actor quits for any reason: nothing outlives it.
    cancel->store(true);
    if (pump.joinable()) pump.join();
    if (control_reader.joinable()) control_reader.join();
    if (control_fd >= 0) ::close(control_fd);
  }
};

using ExecutorActor = caf::stateful_actor<ExecutorState>;

// A process's scratch dir (Ray's sessions and sockets) goes with it. Only an
// absolute path below a top-level directory: never "/" or a relative path.
void remove_scratch_dir(const std::string& dir, const StreamId& stream) {
  std::filesystem::path path(dir);
  if (!path.is_absolute() || std::distance(path.begin(), path.end()) < 3) {
    component_logger("executor")
        ->warn("{}: scratch dir '{}' not removed: not an absolute path below a top-level directory",
               stream_name(stream), dir);
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec)
    component_logger("executor")
        ->warn("{}: cannot remove scratch dir {}: {}", stream_name(stream), dir, ec.message());
}

// The first line of the failed rank's error file (torchelastic's @record),
// or "": read without following a link, at most 64 KiB (a traceback).
std::string failure_reason(const ProcessMeter& meter) {
  int fd = ::open(meter.error_file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char buf[8192];
  ssize_t got = 0;
  while (text.size() < 64 * 1024 && (got = ::read(fd, buf, sizeof buf)) > 0)
    text.append(buf, static_cast<size_t>(got));
  ::close(fd);
  return error_file_summary(text).value_or("");
}

// Runs on the pump thread: moves output to the sink (at most kAckWindow chunks
// unacknowledged), then tells the executor how the process ended — after the
// control reader sent its last line (`control_done`), so a task's result line
// reaches the supervisor before its end.
// With `unsent` (a worker pod's), the chunks not yet acknowledged are held
// with where each begins in the process's output: once the head is lost
// (`sink_gone`: a cut, a dead head) or the wait is cancelled, they and all
// that follows go to `unsent`, which the pod sends again when it rejoins.
void pump_to_sink(caf::actor_system& sys, std::unique_ptr<os::ChildProcess> child, caf::actor sink,
                  StreamId stream, std::int32_t attempt, std::string scratch_dir,
                  caf::actor executor, std::shared_ptr<std::atomic<bool>> cancel,
                  std::shared_ptr<std::atomic<bool>> sink_gone,
                  std::shared_ptr<std::atomic<bool>> control_done,
                  std::shared_ptr<ProcessMeter> meter, std::shared_ptr<UnsentOutput> unsent,
                  os::OomKills oom_at_start) {
  caf::scoped_actor io{sys};
  int outstanding = 0;
  std::int64_t offset = 0;  // bytes of the process's output before the next chunk
  std::deque<std::pair<std::int64_t, caf::message>> unacked;  // held only with `unsent`
  bool keeping = false;  // the head is lost: every chunk goes to `unsent`
  auto keep_unacked = [&] {
    for (auto& [at, msg] : unacked)
      unsent->keep({stream, attempt, at, msg.get_as<std::string>(4), msg.get_as<std::int32_t>(5)});
    unacked.clear();
    outstanding = 0;
    keeping = true;
  };
  auto await_ack = [&] {
    bool got = false;
    while (!got && !cancel->load() && !(unsent && sink_gone->load())) {
      io->receive([&](ack_atom) { got = true; },
                  caf::after(std::chrono::milliseconds(200)) >> [] {});
    }
    if (got) {
      --outstanding;
      if (!unacked.empty()) unacked.pop_front();
    }
    return got;
  };
  os::ChunkSink deliver = [&](os::LineChunk&& chunk) {
    if (unsent && !keeping && sink_gone->load()) keep_unacked();
    while (!keeping && outstanding >= kAckWindow) {
      if (await_ack()) continue;
      if (!unsent) return false;
      keep_unacked();
    }
    if (meter) meter->lines.fetch_add(static_cast<std::int64_t>(chunk.lines));
    const std::int64_t at = offset;
    offset += static_cast<std::int64_t>(chunk.data.size());
    const auto lines = static_cast<std::int32_t>(chunk.lines);
    if (keeping) {
      unsent->keep({stream, attempt, at, std::move(chunk.data), lines});
      return true;
    }
    // With where it begins in the process's output: a chunk that comes twice
    // (a cut connection delivers it after the pod sent its kept copy) is
    // written once.
    auto msg =
        caf::make_message(log_atom::value, stream, attempt, at, std::move(chunk.data), lines);
    if (unsent) {
      // A remote sink's message is only read (serialized): holding it costs no copy.
      io->send(sink, msg);
      unacked.emplace_back(at, std::move(msg));
    } else {
      io->send(sink, std::move(msg));
    }
    ++outstanding;
    return true;
  };
  os::ExitStatus status = os::pump_output(*child, deliver, *cancel);
  while (outstanding > 0 && await_ack()) {
  }
  if (unsent && outstanding > 0) keep_unacked();
  // The guard has swept the tree: nothing can write into the scratch dir now.
  if (!scratch_dir.empty()) remove_scratch_dir(scratch_dir, stream);
  std::string reason;
  if (meter && !meter->progress_file.empty()) ::unlink(meter->progress_file.c_str());
  if (meter && !meter->flight_recorder_dir.empty())
    os::remove_flight_recorder(meter->flight_recorder_dir);
  if (meter && !meter->error_file.empty()) {
    if (!status.success()) reason = failure_reason(*meter);
    if (meter->error_file_ours) ::unlink(meter->error_file.c_str());
  }
  // Killed for memory (it, or a DataLoader worker of it): said, with what to do.
  if (!status.success()) {
    if (auto hint = os::oom_hint(oom_at_start, os::read_oom_kills(), status))
      reason = reason.empty() ? *hint : reason + "; " + *hint;
  }
  // The tree is swept, so the reader sees its end now: looked at every
  // 0.2 ms for the first 10 ms (it comes within a moment; a 10 ms step cost
  // each rank's end up to 10 ms), then every 10 ms. Bounded: a descendant
  // that kept the channel open (none should) costs at most 2 s, off CAF's threads.
  const auto given_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int i = 0; !control_done->load() && std::chrono::steady_clock::now() < given_up; ++i)
    std::this_thread::sleep_for(i < 50 ? std::chrono::microseconds(200)
                                       : std::chrono::microseconds(10'000));
  caf::anon_send(executor, exited_atom::value, static_cast<std::int32_t>(status.code),
                 static_cast<std::int32_t>(status.signal), std::move(reason));
}

// What a process's own thread needs to start it (run_process).
struct ProcessStart {
  os::SpawnRequest request;
  std::shared_ptr<os::Lease> lease;    // request.lease points into it
  int control_child = -1;              // the child's end of its control channel
  std::chrono::milliseconds stall{0};  // a test hook's wait before the spawn
};

// Runs on the process's own thread, which lives as long as the process:
// starts it (a spawn may block: a working dir on a hung mount), tells the
// executor (spawned_atom: its pid, or why not), then pumps its output.
void run_process(caf::actor_system& sys, ProcessStart start, caf::actor sink, StreamId stream,
                 std::int32_t attempt, std::string scratch_dir, caf::actor executor,
                 std::shared_ptr<std::atomic<bool>> cancel,
                 std::shared_ptr<std::atomic<bool>> sink_gone,
                 std::shared_ptr<std::atomic<bool>> control_done,
                 std::shared_ptr<ProcessMeter> meter, std::shared_ptr<UnsentOutput> unsent) {
  for (auto until = std::chrono::steady_clock::now() + start.stall;
       std::chrono::steady_clock::now() < until && !cancel->load();)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const os::OomKills oom_at_start = os::read_oom_kills();
  auto child = os::ChildProcess::spawn(start.request);
  if (start.control_child >= 0) ::close(start.control_child);  // the child holds its own copy
  if (!child) {
    if (meter && !meter->progress_file.empty()) ::unlink(meter->progress_file.c_str());
    if (meter && !meter->flight_recorder_dir.empty())
      os::remove_flight_recorder(meter->flight_recorder_dir);
    if (meter && meter->error_file_ours && !meter->error_file.empty())
      ::unlink(meter->error_file.c_str());
    caf::anon_send(executor, spawned_atom::value, child.error());
    return;
  }
  if (meter) meter->pid.store(static_cast<std::int32_t>(child->pid()));
  caf::anon_send(executor, spawned_atom::value, static_cast<std::int32_t>(child->pid()));
  pump_to_sink(sys, std::make_unique<os::ChildProcess>(std::move(*child)), std::move(sink), stream,
               attempt, std::move(scratch_dir), std::move(executor), std::move(cancel),
               std::move(sink_gone), std::move(control_done), std::move(meter), std::move(unsent),
               oom_at_start);
}

// Runs on its own thread: every line the process writes on its control
// channel goes to the executor as a ProcessNote (which forwards it, so the
// supervisor can answer the executor).
void read_control(int fd, ProcessNote header, caf::actor executor,
                  std::shared_ptr<std::atomic<bool>> cancel,
                  std::shared_ptr<std::atomic<bool>> done) {
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag.store(true); }
  } mark{*done};
  os::LineReader reader(fd);
  std::string line;
  while (!cancel->load()) {
    auto r = reader.read(line, std::chrono::milliseconds(200));
    if (r == os::LineReader::Result::line) {
      ProcessNote note = header;
      note.line = std::move(line);
      caf::anon_send(executor, std::move(note));
    } else if (r != os::LineReader::Result::timeout) {
      return;  // every copy of the child's end is closed: the process is gone
    }
  }
}

// torch's flight recorder on in the rank, and atl's hook to ask it for its
// record (os/flight_recorder.hpp): where the head asks (an spmd rank gets
// ATL_FLIGHT_RECORDER=1 unless its job says 0). A buffer size the job sets
// is the job's; otherwise the last 64 collectives: the diagnosis reads each
// group's numbers (kept apart from the buffer) and the op of the one in
// flight, and a dump of 64 costs a rank ~1 ms, of 256 enough CPU to look
// like work to the hang watch.
void turn_on_flight_recorder(ProcessMeter& meter, const EnvMap& job_env, EnvMap& env,
                             spdlog::logger& log) {
  auto on = job_env.find("ATL_FLIGHT_RECORDER");
  if (on == job_env.end() || on->second != "1") {
    meter.flight_recorder_dir.clear();
    return;
  }
  if (auto made = os::prepare_flight_recorder(meter.flight_recorder_dir); !made) {
    log.warn("no flight recorder for this rank: {}", made.error());
    meter.flight_recorder_dir.clear();
    return;
  }
  std::string& path = env["PYTHONPATH"];
  path = path.empty() ? meter.flight_recorder_dir : meter.flight_recorder_dir + ":" + path;
  env["ATL_FLIGHT_RECORDER_DIR"] = meter.flight_recorder_dir;
  // torch 2.7+'s name; the hook gives an older torch its own (setting both
  // makes a new torch warn on the rank's output at every dump).
  if (!job_env.count("TORCH_FR_BUFFER_SIZE") && !job_env.count("TORCH_NCCL_TRACE_BUFFER_SIZE"))
    env["TORCH_FR_BUFFER_SIZE"] = "64";
}

// The guard sweeps the whole tree now (setsid escapees too); the group's
// SIGKILL follows in 3 s in case the guard itself is stuck.
void sweep_tree(ExecutorActor* self) {
  auto& st = self->state;
  st.tree_killed = true;
  os::ask_guard_to_kill_tree(st.pid);
  self->delayed_send(self, std::chrono::seconds(3), kill_atom::value);
}

// Test-only: the spawn of the ranks listed in the job's
// ATL_TEST_SPAWN_STALL_RANKS ("0,1") waits ATL_TEST_SPAWN_STALL_MS first, as a
// spawn whose chdir hangs on a dead mount does (tests/integration: the node
// goes on meanwhile).
std::chrono::milliseconds spawn_stall_for_tests(const EnvMap& job_env, const StreamId& stream) {
  auto ms = job_env.find("ATL_TEST_SPAWN_STALL_MS");
  auto ranks = job_env.find("ATL_TEST_SPAWN_STALL_RANKS");
  if (ms == job_env.end() || ranks == job_env.end() || stream.kind != StreamKind::rank) return {};
  const std::string list = "," + ranks->second + ",";
  if (list.find("," + std::to_string(stream.rank) + ",") == std::string::npos) return {};
  return std::chrono::milliseconds(std::atol(ms->second.c_str()));
}

caf::behavior running_behavior(ExecutorActor* self);

caf::behavior executor_behavior(ExecutorActor* self, ProcessLaunch launch, std::string pod,
                                caf::actor sink, caf::actor report_to,
                                std::shared_ptr<os::Lease> lease,
                                std::shared_ptr<ProcessMeter> meter,
                                std::shared_ptr<UnsentOutput> unsent) {
  auto& st = self->state;
  st.launch = std::move(launch);
  st.pod = std::move(pod);
  st.report_to = std::move(report_to);
  auto log = component_logger("executor");

  // The node's own environment, with the rank's variables laid over it.
  EnvMap env = env_from_strings(os::current_environment());
  const EnvMap job_env = env_from_strings(st.launch.env);
  for (auto& [k, v] : job_env) env[k] = v;
  // atl's own tools (atlctl, atl-burn) sit beside this binary: ranks find them.
  std::string bin_dir = os::executable_dir();
  std::string& path = env["PATH"];
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  if (path.rfind(bin_dir + ":", 0) != 0) path = bin_dir + ":" + path;
  os::SpawnRequest req;
  os::ControlPair control;
  if (st.launch.control) {
    if (auto pair = os::make_control_pair()) {
      control = *pair;
      req.control_fd = control.child;
      env[os::kControlFdVariable] = std::to_string(os::kChildControlFd);  // ours, whatever ENVS say
    } else {
      log->warn("{}: no control channel: {}", stream_name(st.launch.stream), pair.error());
    }
  }
  if (meter && !meter->progress_file.empty()) {
    // An explicit progress signal for the hang watch: touching this file.
    // A fresh file of ours: whatever a crash left there (or someone put
    // there, a link in a shared /tmp) is removed first, never followed.
    ::unlink(meter->progress_file.c_str());
    if (int fd = ::open(meter->progress_file.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        fd >= 0)
      ::close(fd);
    env["ATL_PROGRESS_FILE"] = meter->progress_file;
  }
  if (meter && !meter->error_file.empty()) {
    // torchrun's contract: @record writes the rank's exception here. A path
    // the job's own env gives is the user's (read, left in place); the
    // node's own environment's is not this rank's.
    auto given = job_env.find("TORCHELASTIC_ERROR_FILE");
    if (given != job_env.end() && !given->second.empty()) {
      meter->error_file = given->second;
      meter->error_file_ours = false;
    } else {
      ::unlink(meter->error_file.c_str());  // an earlier run's, never read as this one's
      env["TORCHELASTIC_ERROR_FILE"] = meter->error_file;
    }
  }
  if (meter && !meter->flight_recorder_dir.empty())
    turn_on_flight_recorder(*meter, job_env, env, *log);
  req.argv = {"/bin/sh", "-c", st.launch.command};
  req.env = to_env_strings(env);
  req.working_dir = st.launch.working_dir;
  req.lease = lease.get();
  // On the head's host: inside the head's own pod (headnode's
  // --isolate-local-pods), where the guide's cleanup sees this job only.
  req.pod_namespace = os::commands_namespace();
  st.control_fd = control.parent;
  if (st.control_fd < 0) st.control_done->store(true);  // no reader to wait for
  // The spawn (a vfork, the child's chdir, the wait for its exec report) and
  // then the pump run on the process's own thread: a spawn that blocks (a
  // working dir on a hung mount) holds that thread only, never one of CAF's
  // few scheduler threads, which the node's heartbeats need. The thread
  // lives as long as the process (the child's pdeathsig is tied to it).
  // Until it says the process started, everything else waits in the mailbox.
  ProcessStart start{std::move(req), lease, control.child,
                     spawn_stall_for_tests(job_env, st.launch.stream)};
  st.pump = std::thread(run_process, std::ref(self->system()), std::move(start), std::move(sink),
                        st.launch.stream, st.launch.attempt, st.launch.scratch_dir,
                        caf::actor_cast<caf::actor>(self), st.cancel, st.sink_gone, st.control_done,
                        meter, std::move(unsent));
  self->set_default_handler(caf::skip);
  return {
      [self](spawned_atom, std::int32_t pid) {
        auto& st = self->state;
        st.pid = pid;
        self->send(st.report_to,
                   ProcessStarted{st.launch.stream, st.launch.attempt, st.pod, st.pid});
        component_logger("executor")
            ->info("{} started as pid {} on {}", stream_name(st.launch.stream), st.pid, st.pod);
        if (st.control_fd >= 0) {
          st.control_reader =
              std::thread(read_control, st.control_fd,
                          ProcessNote{st.launch.stream, st.launch.attempt, st.pod, ""},
                          caf::actor_cast<caf::actor>(self), st.cancel, st.control_done);
        }
        self->set_default_handler(caf::print_and_drop);
        self->become(running_behavior(self));
      },
      [self](spawned_atom, const std::string& error) {
        auto& st = self->state;
        component_logger("executor")
            ->error("{}: cannot start: {}", stream_name(st.launch.stream), error);
        self->send(st.report_to,
                   ProcessExit{st.launch.stream, st.launch.attempt, st.pod, 127, 0, error, ""});
        self->quit();
      },
      [self](sink_lost_atom) { self->state.sink_gone->store(true); },
  };
}

// The executor once its process runs.
caf::behavior running_behavior(ExecutorActor* self) {
  return {
      // Process -> supervisor, sent from here so the answer finds this executor.
      [self](ProcessNote& note) { self->send(self->state.report_to, std::move(note)); },
      // Supervisor -> process.
      [self](control_atom, const std::string& line) {
        auto& st = self->state;
        if (st.control_fd < 0 || st.exited) return;
        if (auto sent = os::write_line(st.control_fd, line); !sent) {
          component_logger("executor")
              ->warn("{}: control line not delivered: {}", stream_name(st.launch.stream),
                     sent.error());
        }
      },
      // The node lost its head: what this process wrote and the head did not
      // acknowledge is held for the pod's rejoin, never waited on.
      [self](sink_lost_atom) { self->state.sink_gone->store(true); },
      [self](stop_atom, std::int64_t grace_ms) {
        auto& st = self->state;
        if (st.exited) return;
        const auto now = std::chrono::steady_clock::now();
        if (st.warned_until && now < *st.warned_until) return;  // its SIGTERM is on the way
        if (st.launch.stop_at_once) {
          if (st.tree_killed) return;
          component_logger("executor")
              ->info("{}: stopped at once (nothing of it is kept)", stream_name(st.launch.stream));
          sweep_tree(self);
          return;
        }
        if (st.launch.warn_signal > 0 && !st.warned_until) {
          // Slurm's --signal: the rank's own process (not atl's guard, not
          // its DataLoader workers) hears first, and may checkpoint.
          const auto lead = std::chrono::milliseconds(st.launch.warn_ms);
          st.warned_until = now + lead;
          const os::ProcessTable table = os::read_process_table();
          const pid_t target =
              os::user_process(table, os::child_index(table), st.pid, os::live_facts());
          if (target > 0 && target != st.pid) ::kill(target, st.launch.warn_signal);
          component_logger("executor")
              ->info("{}: signal {} to pid {}, its stop in {}", stream_name(st.launch.stream),
                     st.launch.warn_signal, target, format_duration(lead));
          self->delayed_send(self, lead, stop_atom::value, grace_ms);
          return;
        }
        // One SIGTERM per process per stop: a torchelastic-style handler
        // (raise on SIGTERM, checkpoint in `except`) hit by a second one
        // loses its checkpoint.
        if (st.term_sent) return;
        st.term_sent = true;
        ::kill(-st.pid, SIGTERM);
        // A stopped process (SIGSTOP, a debugger) would sit on its SIGTERM
        // until the grace ran out: continued, it runs its handler now.
        ::kill(-st.pid, SIGCONT);
        self->delayed_send(self, std::chrono::milliseconds(grace_ms), kill_atom::value);
      },
      [self](kill_atom) {
        auto& st = self->state;
        if (st.exited) return;
        if (!st.tree_killed) {
          component_logger("executor")
              ->warn("{} outlived its grace period: SIGKILL", stream_name(st.launch.stream));
          sweep_tree(self);
          return;
        }
        ::kill(-st.pid, SIGKILL);
      },
      [self](exited_atom, std::int32_t code, std::int32_t sig, std::string& reason) {
        auto& st = self->state;
        st.exited = true;
        if (st.pump.joinable()) st.pump.join();
        // The reader's lines are in the mailbox before this (the pump waited for
        // it); one still reading (a channel kept open) is cancelled.
        st.cancel->store(true);
        if (st.control_reader.joinable()) st.control_reader.join();
        os::ExitStatus status{code, sig};
        component_logger("executor")
            ->info("{} ended: {}", stream_name(st.launch.stream), status.describe());
        if (!reason.empty())
          component_logger("executor")
              ->info("{} says why: {}", stream_name(st.launch.stream), reason);
        self->send(st.report_to, ProcessExit{st.launch.stream, st.launch.attempt, st.pod, code, sig,
                                             "", std::move(reason)});
        self->quit();
      },
  };
}

}  // namespace

std::string process_tmp_path(const std::string& prefix, const std::string& pod,
                             const ProcessLaunch& launch, const std::string& suffix) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + pod + "-" +
         stream_name(launch.stream) + "-" + std::to_string(launch.attempt) + suffix;
}

caf::actor spawn_executor(caf::actor_system& sys, ProcessLaunch launch, std::string pod,
                          caf::actor sink, caf::actor report_to, std::shared_ptr<os::Lease> lease,
                          std::shared_ptr<ProcessMeter> meter,
                          std::shared_ptr<UnsentOutput> unsent) {
  return sys.spawn(executor_behavior, std::move(launch), std::move(pod), std::move(sink),
                   std::move(report_to), std::move(lease), std::move(meter), std::move(unsent));
}

}  // namespace atl
