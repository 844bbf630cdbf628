// PodCourse: the worker pods' comings and goings, in plain C++.
//
// It owns the PodRegistry (who is expected, joined, lost; each pod's agent
// and machine) and the Liveness (heartbeats, silence), and sequences what
// happens to a pod: it joins and is watched; each liveness tick sends the
// heartbeats and finds the silent, which are fenced and lost; a pod told to
// go (SIGTERM), deleted (atlctl delete) or whose GPU went is lost with its
// fault; a lost pod leaves the registry and the watch once. Its effects come
// back as data (PodEffects, in order) for the shell to perform: message an
// agent, stop watching its actor, tell the controller (record, taint the
// platform) and, for a pod gone, the one fan-out to the pieces that held
// work on it (`pods::Gone`). Each input takes `now`: tested in fake time.
//
// `Agent` is whatever the shell talks to a pod through (a caf::actor in the
// supervisor, an int in the tests), as in PodRegistry.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "atl/core/node_info.hpp"
#include "atl/core/restart_policy.hpp"
#include "atl/supervisor/liveness.hpp"
#include "atl/supervisor/pod_registry.hpp"

namespace atl::supervisor {

namespace pods {
// A heartbeat interval passed: the heartbeats that follow go out, and
// whatever else is due once per interval (the named actors' hosts' pings).
struct HeartbeatRound {};
// A heartbeat to the pod's agent.
template <class Agent>
struct Heartbeat {
  Agent agent;
};
// The pod was declared lost while silent: if it ever wakes up it kills its
// ranks and leaves (its lease ran out by then, so they are dead already).
template <class Agent>
struct Fence {
  Agent agent;
  std::string detail;
};
// The pod is to leave at once (atlctl delete, a lost GPU): its agent says so.
template <class Agent>
struct Delete {
  Agent agent;
  std::string detail;
};
// Its agent is no longer the pod's: stop watching it (a down message of it
// means nothing now).
template <class Agent>
struct Forget {
  Agent agent;
};
// The pod is gone with `fault`: its tasks, bundles, ranks and debug runs go
// with it, and the controller decides the course (the shell's one fan-out).
struct Gone {
  std::string pod;
  Fault fault;
};
// The controller's timeline: a line of `kind`.
struct Record {
  std::string kind;
  std::string text;
};
// The machine the pod ran on is not to be used again (a lost GPU).
struct TaintPlatform {
  std::string pod;
  std::string detail;
};
// The supervisor itself was busy this long (its tick came that late): said
// in the log, so that slow requests can be traced afterwards.
struct Stalled {
  Millis late{0};
};
}  // namespace pods

template <class Agent>
using PodEffect = std::variant<pods::HeartbeatRound, pods::Heartbeat<Agent>, pods::Fence<Agent>,
                               pods::Delete<Agent>, pods::Forget<Agent>, pods::Gone, pods::Record,
                               pods::TaintPlatform, pods::Stalled>;
template <class Agent>
using PodEffects = std::vector<PodEffect<Agent>>;

// What a GPU report is judged against: the job's side of GpuCount.
struct GpuView {
  bool checked = false;     // a pre-flight found the pod's GPUs (command, debug states)
  bool runs_ranks = false;  // the pod is active and its ranks run
  bool machine_tainted = false;
};

template <class Agent>
class PodCourse {
 public:
  using Registry = PodRegistry<Agent>;
  using TimePoint = Liveness::TimePoint;
  using Effects = PodEffects<Agent>;

  PodCourse() = default;
  PodCourse(std::string job_id, std::vector<std::string> expected, HeartbeatOptions heartbeat,
            Millis tick)
      : pods_(std::move(job_id), std::move(expected)), liveness_(heartbeat, tick) {}

  const Registry& registry() const { return pods_; }
  const Liveness& liveness() const { return liveness_; }

  // `info.pod` joins through `agent` (watched from `now`): nullopt when it
  // joined (`rejoined`: it had been lost), else why not; a refusal changes
  // nothing.
  std::optional<Refusal> join(const NodeInfo& info, Agent agent,
                              const typename Registry::JoinRules& rules, TimePoint now,
                              bool* rejoined = nullptr) {
    if (auto refused = pods_.join(info, std::move(agent), rules, rejoined)) return refused;
    liveness_.watch(info.pod, now);
    return std::nullopt;
  }

  // The liveness timer at `now`: heartbeats out once per interval, the
  // supervisor's own stall said, silent pods fenced and lost.
  Effects on_tick(TimePoint now, bool started) {
    Effects out;
    const auto tick = liveness_.tick(now);
    if (tick.stall) out.push_back(pods::Stalled{*tick.stall});
    if (tick.send_heartbeats) out.push_back(pods::HeartbeatRound{});
    if (tick.send_heartbeats)
      for (const auto& [pod, joined] : pods_.joined_pods())
        out.push_back(pods::Heartbeat<Agent>{joined.agent});
    for (const auto& pod : tick.silent) {
      const auto* joined = pods_.find(pod);
      if (!joined) continue;
      std::string detail = "pod " + pod + " stopped answering (no heartbeat for " +
                           format_duration(liveness_.heartbeat().timeout) + ")";
      out.push_back(pods::Fence<Agent>{joined->agent, detail});
      lose(pod, {FaultKind::pod_hung, pod, detail}, started, out);
    }
    return out;
  }

  // A heartbeat of `pod` (from its own node: the shell checked) counting
  // `gpus_present` of its GPUs (-1: it declared none).
  Effects on_heartbeat(const std::string& pod, std::int32_t gpus_present, const GpuView& view,
                       TimePoint now, bool started) {
    Effects out;
    const auto* joined = pods_.find(pod);
    if (!joined) return out;
    liveness_.heard(pod, now);
    GpuCount count;
    count.declared = joined->info.gpus;
    count.present = gpus_present;
    count.checked = view.checked;
    count.machine_tainted = view.machine_tainted;
    count.runs_ranks = view.runs_ranks;
    if (lost_a_gpu(count))
      remove_for_its_gpu(pod,
                         "pod " + pod + " lost a GPU (it declared " +
                             std::to_string(count.declared) + ", " + std::to_string(gpus_present) +
                             " are there)",
                         started, out);
    return out;
  }

  // The pod's NVML watch saw a fault (a critical Xid, a lost GPU, a
  // double-bit ECC error, a row remap pending): as a GPU gone missing. A
  // pod quarantined on a tainted machine and running no ranks stays: then
  // nothing, and `quarantined` says so.
  Effects on_gpu_fault(const std::string& pod, const std::string& reason, const GpuView& view,
                       bool started, bool* quarantined = nullptr) {
    Effects out;
    if (!pods_.find(pod)) return out;
    const bool removes = gpu_fault_removes_pod(view.machine_tainted, view.runs_ranks);
    if (quarantined) *quarantined = !removes;
    if (removes) remove_for_its_gpu(pod, "pod " + pod + ": " + reason, started, out);
    return out;
  }

  // `pod` was told to go (`why`: SIGTERM, as Kubernetes evicts, drains or
  // deletes): a lost pod, whose ranks its agent stops within the job's grace.
  Effects evict(const std::string& pod, const std::string& why, bool started) {
    Effects out;
    lose(pod,
         {FaultKind::pod_lost, pod,
          "pod " + pod + " was lost: told to go (" + why +
              ": evicted, drained or deleted; its ranks get their grace)"},
         started, out);
    return out;
  }

  // `pod` is gone (`fault`): its agent went down, or the shell says so.
  Effects lose(const std::string& pod, const Fault& fault, bool started) {
    Effects out;
    lose(pod, fault, started, out);
    return out;
  }

  // atlctl delete -p SPEC|all: refused as a whole (nothing deleted) when a
  // pod is unknown or not there; else each pod leaves and is recreated.
  std::variant<Effects, Refusal> delete_pods(const std::string& spec, bool started) {
    auto chosen = pods_.select_for_delete(spec);
    if (auto* refused = std::get_if<Refusal>(&chosen)) return *refused;
    Effects out;
    for (const auto& pod : std::get<std::vector<std::string>>(chosen)) {
      std::string detail = "pod " + pod + " was deleted (atlctl delete)";
      out.push_back(pods::Record{"delete", detail});
      out.push_back(pods::Delete<Agent>{pods_.at(pod).agent, detail});
      lose(pod, {FaultKind::pod_deleted, pod, detail}, started, out);
    }
    return out;
  }

 private:
  void remove_for_its_gpu(const std::string& pod, const std::string& detail, bool started,
                          Effects& out) {
    out.push_back(pods::TaintPlatform{pod, detail});
    out.push_back(pods::Delete<Agent>{pods_.at(pod).agent, detail});
    lose(pod, {FaultKind::gpu_lost, pod, detail}, started, out);
  }

  // In pending a pod is just missing again; after the start it is awaited
  // as lost. Once: a pod not joined (lost already) changes nothing.
  void lose(const std::string& pod, const Fault& fault, bool started, Effects& out) {
    auto agent = pods_.leave(pod, started);
    if (!agent) return;
    liveness_.forget(pod);
    out.push_back(pods::Forget<Agent>{std::move(*agent)});
    out.push_back(pods::Gone{pod, fault});
  }

  Registry pods_;
  Liveness liveness_;
};

}  // namespace atl::supervisor
