#include "atl/actors/job_supervisor.hpp"

#include <caf/all.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "atl/actors/executor.hpp"
#include "atl/actors/messages.hpp"
#include "atl/core/lifecycle.hpp"
#include "atl/core/rank_layout.hpp"
#include "atl/os/child_process.hpp"
#include "atl/os/logging.hpp"
#include "atl/os/machine.hpp"

namespace atl {

namespace {

constexpr auto kCheckTimeout = std::chrono::seconds(60);
constexpr auto kShutdownTimeout = std::chrono::seconds(10);
constexpr auto kStopSlack = std::chrono::seconds(10);

enum TimerKind : std::int32_t { kReadyTimer, kStopTimer, kShutdownTimer, kLingerTimer };

struct Node {
  NodeInfo info;
  caf::actor agent;
};

struct RankRecord {
  std::string pod;
  bool done = false;
  std::int32_t code = 0;
  std::int32_t signal = 0;
  std::string note;  // why it ended, when not by itself
};

struct SupervisorState {
  SupervisorConfig config;
  Lifecycle lifecycle;
  std::string address;                       // HOST:PORT, for ATL_ADDRESS
  std::vector<std::string> expected_pods;    // index = node rank
  std::map<std::string, Node> nodes;         // joined (and not lost)
  std::map<std::int32_t, RankRecord> ranks;  // stream -> record
  caf::actor driver;
  std::string failure;
  bool finalizing = false;
  bool finished = false;  // workers gone; maybe lingering
  bool released = false;  // outcome handed over
  std::set<caf::actor_addr> agents_leaving;
  std::shared_ptr<spdlog::logger> log = component_logger("supervisor");

  const JobSpec& job() const { return config.job; }
  JobState state() const { return lifecycle.state(); }
};

using SupervisorActor = caf::stateful_actor<SupervisorState>;

void finalize(SupervisorActor* self);
void fail(SupervisorActor* self, JobEvent event, const std::string& reason);

bool apply(SupervisorActor* self, JobEvent event) {
  auto& st = self->state;
  JobState before = st.state();
  auto next = st.lifecycle.apply(event);
  if (!next) {
    st.log->debug("ignored: {}", next.error());
    return false;
  }
  if (*next != before)
    st.log->info("job {}: {} -> {}", st.job().job_id, to_string(before), to_string(*next));
  return true;
}

std::string rank_label(std::int32_t stream) {
  return stream == kDriverStream ? "the driver" : "rank " + std::to_string(stream);
}

bool all_ranks_done(const SupervisorState& st) {
  for (const auto& [stream, r] : st.ranks)
    if (!r.done) return false;
  return true;
}

// --- command -----------------------------------------------------------------

void start_command(SupervisorActor* self) {
  auto& st = self->state;
  if (!apply(self, JobEvent::checks_passed)) return;
  const JobSpec& job = st.job();
  AtlEndpoint atl{st.address, job.job_id};
  if (job.mode == JobMode::driver) {
    RankLaunch launch;
    launch.stream = kDriverStream;
    launch.command = job.entrypoint;
    launch.env = to_env_strings(build_driver_env(job, atl, head_pod_name(job.job_id)));
    launch.working_dir = job.working_dir;
    st.ranks[kDriverStream] = RankRecord{head_pod_name(job.job_id)};
    st.driver = spawn_executor(self->system(), std::move(launch), head_pod_name(job.job_id),
                               st.config.sink, caf::actor_cast<caf::actor>(self));
    return;
  }
  std::vector<NodeSlot> slots;
  for (const auto& pod : st.expected_pods) {
    const NodeInfo& info = st.nodes.at(pod).info;
    slots.push_back(NodeSlot{pod, info.address, info.interface, info.gpus});
  }
  auto layout = layout_ranks(slots, job.nproc_per_node);
  if (!layout) {
    fail(self, JobEvent::rank_failed, "cannot place ranks: " + layout.error());
    return;
  }
  std::map<std::string, std::vector<RankLaunch>> per_pod;
  for (const auto& placement : *layout) {
    const std::string& pod = slots[placement.node_rank].pod;
    RankLaunch launch;
    launch.stream = placement.rank;
    launch.command = job.entrypoint;
    launch.env = to_env_strings(build_rank_env(job, slots, *layout, placement, atl));
    launch.working_dir = job.working_dir;
    per_pod[pod].push_back(std::move(launch));
    st.ranks[placement.rank] = RankRecord{pod};
  }
  st.log->info("launching {} ranks on {} pods", layout->size(), per_pod.size());
  for (auto& [pod, launches] : per_pod)
    self->send(st.nodes.at(pod).agent, launch_atom::value, std::move(launches), st.config.sink);
}

// --- ending ------------------------------------------------------------------

void stop_ranks(SupervisorActor* self) {
  auto& st = self->state;
  auto grace = static_cast<std::int64_t>(st.job().grace.count());
  for (const auto& [pod, node] : st.nodes) self->send(node.agent, stop_atom::value, grace);
  if (st.driver) self->send(st.driver, stop_atom::value, grace);
}

void fail(SupervisorActor* self, JobEvent event, const std::string& reason) {
  auto& st = self->state;
  if (is_terminal(st.state()) || !apply(self, event)) return;
  st.failure = reason;
  st.log->error("job {} failed: {}", st.job().job_id, reason);
  if (all_ranks_done(st)) {
    finalize(self);
    return;
  }
  stop_ranks(self);
  self->delayed_send(self, st.job().grace + kStopSlack, timeout_atom::value,
                     static_cast<std::int32_t>(kStopTimer));
}

// Hands the outcome to headnode's main and ends the supervisor.
void release(SupervisorActor* self) {
  auto& st = self->state;
  if (st.released) return;
  st.released = true;
  st.config.outcome->set_value(st.state() == JobState::succeeded ? 0 : 1);
  self->quit();
}

void deliver_outcome(SupervisorActor* self) {
  auto& st = self->state;
  if (st.finished) return;
  st.finished = true;
  if (st.config.linger.count() > 0) {
    self->delayed_send(self, st.config.linger, timeout_atom::value,
                       static_cast<std::int32_t>(kLingerTimer));
    return;
  }
  release(self);
}

// Tells every worker how the job ended and waits (bounded) for them to leave.
void finalize(SupervisorActor* self) {
  auto& st = self->state;
  if (st.finalizing) return;
  st.finalizing = true;
  for (auto& [stream, r] : st.ranks) {
    if (!r.done) {
      r.done = true;
      r.note = "abandoned";
    }
  }
  bool ok = st.state() == JobState::succeeded;
  if (!ok) self->send(st.config.sink, print_atom::value, "job failed: " + st.failure);
  self->send(st.config.sink, print_atom::value,
             "Job status:  " + std::string(to_string(st.state())));
  st.log->info("job {} {}", st.job().job_id, to_string(st.state()));
  for (const auto& [pod, node] : st.nodes) {
    self->send(node.agent, shutdown_atom::value, static_cast<std::int32_t>(ok ? 0 : 1));
    st.agents_leaving.insert(node.agent.address());
  }
  if (st.agents_leaving.empty()) {
    deliver_outcome(self);
    return;
  }
  self->delayed_send(self, kShutdownTimeout, timeout_atom::value,
                     static_cast<std::int32_t>(kShutdownTimer));
}

void on_rank_exit(SupervisorActor* self, const RankExit& exit) {
  auto& st = self->state;
  auto it = st.ranks.find(exit.stream);
  if (it == st.ranks.end() || it->second.done) return;
  RankRecord& r = it->second;
  r.done = true;
  r.code = exit.code;
  r.signal = exit.signal;
  r.note = exit.error;
  os::ExitStatus status{exit.code, exit.signal};
  if (st.state() == JobState::command) {
    if (!exit.error.empty()) {
      fail(self, JobEvent::rank_failed,
           rank_label(exit.stream) + " on pod " + exit.pod + " could not start: " + exit.error);
    } else if (!status.success()) {
      fail(self, JobEvent::rank_failed,
           rank_label(exit.stream) + " on pod " + exit.pod + " ended with " + status.describe());
    } else if (all_ranks_done(st) && apply(self, JobEvent::ranks_succeeded)) {
      finalize(self);
    }
  } else if (all_ranks_done(st) && is_terminal(st.state())) {
    finalize(self);
  }
}

// --- joining and checks --------------------------------------------------------

std::string missing_pods(const SupervisorState& st) {
  std::string out;
  for (const auto& pod : st.expected_pods) {
    if (st.nodes.count(pod)) continue;
    if (!out.empty()) out += ", ";
    out += pod;
  }
  return out;
}

void run_checks(SupervisorActor* self) {
  auto& st = self->state;
  if (!apply(self, JobEvent::all_joined)) return;
  if (st.job().mode == JobMode::driver && !st.job().working_dir.empty()) {
    if (auto ok = os::check_writable_dir(st.job().working_dir); !ok) {
      fail(self, JobEvent::check_failed,
           "head pod " + head_pod_name(st.job().job_id) + ": " + ok.error());
      return;
    }
  }
  if (st.nodes.empty()) {
    start_command(self);
    return;
  }
  auto passed = std::make_shared<size_t>(0);
  for (const auto& [pod, node] : st.nodes) {
    self->request(node.agent, kCheckTimeout, check_atom::value, st.job().working_dir)
        .then(
            [self, pod = pod, passed](const std::string& problem) {
              auto& st = self->state;
              if (st.state() != JobState::initializing) return;
              if (!problem.empty()) {
                fail(self, JobEvent::check_failed, "pod " + pod + " failed its check: " + problem);
              } else if (++*passed == st.nodes.size()) {
                start_command(self);
              }
            },
            [self, pod = pod](const caf::error& err) {
              fail(self, JobEvent::check_failed,
                   "pod " + pod + " did not answer its check: " + self->system().render(err));
            });
  }
}

std::string register_node(SupervisorActor* self, const NodeInfo& info, const caf::actor& agent) {
  auto& st = self->state;
  if (st.state() != JobState::pending) {
    return "job " + st.job().job_id + " is in state " + std::string(to_string(st.state())) +
           " and takes no new workers";
  }
  bool expected = false;
  for (const auto& p : st.expected_pods) expected |= p == info.pod;
  if (!expected) {
    std::string range = st.expected_pods.empty()
                            ? "no workers"
                            : st.expected_pods.front() + " .. " + st.expected_pods.back();
    return "unknown pod '" + info.pod + "': job " + st.job().job_id + " expects " + range;
  }
  if (st.nodes.count(info.pod)) {
    return "pod " + info.pod + " already joined from " + st.nodes.at(info.pod).info.address;
  }
  if (info.gpus < st.job().node_spec.gpus) {
    return "pod " + info.pod + " has " + std::to_string(info.gpus) +
           " GPUs; the job's spec asks for " + std::to_string(st.job().node_spec.gpus);
  }
  self->monitor(agent);
  st.nodes[info.pod] = Node{info, agent};
  st.log->info("pod {} joined from {} ({} cpus, {} gpus) [{}/{}]", info.pod, info.address,
               info.cpus, info.gpus, st.nodes.size(), st.expected_pods.size());
  if (st.nodes.size() == st.expected_pods.size()) {
    // After this reply is sent: the check request must not overtake it.
    self->send(self, check_atom::value);
  }
  return "";
}

void on_node_down(SupervisorActor* self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (st.agents_leaving.erase(msg.source) > 0) {
    if (st.agents_leaving.empty()) deliver_outcome(self);
    return;
  }
  for (auto it = st.nodes.begin(); it != st.nodes.end(); ++it) {
    if (it->second.agent.address() != msg.source) continue;
    std::string pod = it->first;
    st.nodes.erase(it);
    for (auto& [stream, r] : st.ranks) {
      if (r.pod == pod && !r.done) {
        r.done = true;
        r.note = "pod lost";
      }
    }
    if (st.state() == JobState::pending) {
      st.log->warn("pod {} left before the job started ({}); waiting for it again", pod,
                   self->system().render(msg.reason));
      apply(self, JobEvent::node_lost);
    } else if (!is_terminal(st.state())) {
      fail(self, JobEvent::node_lost,
           "pod " + pod + " was lost (" + self->system().render(msg.reason) + ")");
    } else if (all_ranks_done(st)) {
      finalize(self);
    }
    return;
  }
}

std::string info_json(const SupervisorState& st) {
  nlohmann::json j;
  j["job_id"] = st.job().job_id;
  j["state"] = to_string(st.state());
  j["mode"] = to_string(st.job().mode);
  j["address"] = st.address;
  j["workers"] = st.job().workers;
  j["nproc_per_node"] = st.job().nproc_per_node;
  j["world_size"] = st.job().mode == JobMode::spmd ? st.job().workers * st.job().nproc_per_node : 0;
  if (!st.failure.empty()) j["failure"] = st.failure;
  j["pods"] = nlohmann::json::array();
  for (const auto& pod : st.expected_pods) {
    nlohmann::json p{{"name", pod}, {"joined", st.nodes.count(pod) > 0}};
    if (auto it = st.nodes.find(pod); it != st.nodes.end()) {
      const NodeInfo& i = it->second.info;
      p["address"] = i.address;
      p["cpus"] = i.cpus;
      p["gpus"] = i.gpus;
      p["memory"] = i.memory;
      p["shm"] = i.shm;
    }
    j["pods"].push_back(p);
  }
  j["ranks"] = nlohmann::json::array();
  for (const auto& [stream, r] : st.ranks) {
    nlohmann::json rj{{"stream", stream}, {"pod", r.pod}, {"state", r.done ? "exited" : "running"}};
    if (r.done) {
      rj["exit_code"] = r.code;
      rj["signal"] = r.signal;
      if (!r.note.empty()) rj["note"] = r.note;
    }
    j["ranks"].push_back(rj);
  }
  return j.dump();
}

caf::behavior job_supervisor(SupervisorActor* self, SupervisorConfig config) {
  auto& st = self->state;
  st.config = std::move(config);
  for (int i = 0; i < st.job().workers; ++i)
    st.expected_pods.push_back(worker_pod_name(st.job().job_id, i));
  self->set_down_handler([self](const caf::down_msg& msg) { on_node_down(self, msg); });

  return {
      [self](start_atom, std::uint16_t port) {
        auto& st = self->state;
        st.address = st.config.advertised_host + ":" + std::to_string(port);
        st.log->info("job {} ({} mode) waiting for {} workers", st.job().job_id,
                     to_string(st.job().mode), st.expected_pods.size());
        if (st.expected_pods.empty()) {
          self->send(self, check_atom::value);
          return;
        }
        self->delayed_send(self, st.job().ready_timeout, timeout_atom::value,
                           static_cast<std::int32_t>(kReadyTimer));
      },
      [self](register_atom, const NodeInfo& info, const caf::actor& agent) {
        return register_node(self, info, agent);
      },
      [self](check_atom) { run_checks(self); },
      [self](const RankExit& exit) { on_rank_exit(self, exit); },
      [self](timeout_atom, std::int32_t kind) {
        auto& st = self->state;
        switch (kind) {
          case kReadyTimer:
            if (st.state() == JobState::pending) {
              fail(self, JobEvent::ready_timeout,
                   "workers not ready after " + format_duration(st.job().ready_timeout) +
                       ": missing " + missing_pods(st));
            }
            break;
          case kStopTimer:
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
        }
      },
      [self](cancel_atom, const std::string& why) {
        if (self->state.finished) {
          release(self);  // a signal ends the linger
          return;
        }
        fail(self, JobEvent::cancelled, "cancelled: " + why);
      },
      [self](status_atom) { return std::string(to_string(self->state.state())); },
      [self](info_atom) { return info_json(self->state); },
      [self](read_atom a, std::int32_t stream, std::int64_t offset, std::int64_t max) {
        return self->delegate(self->state.config.sink, a, stream, offset, max);
      },
      [self](tail_atom a, std::int32_t stream, std::int64_t lines) {
        return self->delegate(self->state.config.sink, a, stream, lines);
      },
  };
}

}  // namespace

caf::actor spawn_job_supervisor(caf::actor_system& sys, SupervisorConfig config) {
  return sys.spawn(job_supervisor, std::move(config));
}

}  // namespace atl
