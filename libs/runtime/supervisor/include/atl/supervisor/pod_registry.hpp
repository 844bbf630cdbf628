// PodRegistry: the job's worker pods. Which pods the job expects (workers and
// spares), which joined (what each said of itself, and its agent), which were
// lost since, and the machine each pod ever joined from (taints mark machines;
// a lost pod's machine is still named in status). It decides who may join and
// which pods `atlctl delete` may take, with the refusal lines users see.
//
// Plain C++: `Agent` is whatever the shell talks to a pod through (a
// caf::actor in the supervisor, an int in the unit tests), so the registry
// holds the handle beside the pod's record and the two can never disagree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "atl/core/node_info.hpp"
#include "atl/core/quote.hpp"
#include "atl/core/reply_code.hpp"
#include "atl/core/split.hpp"
#include "atl/core/suggest.hpp"
#include "atl/supervisor/refusal.hpp"

namespace atl::supervisor {

// Where an expected pod stands: joined (and not lost since), lost (left after
// the job started; awaited again), or missing (never joined, or left before
// the start).
enum class PodStanding { joined, lost, missing };

inline const char* to_string(PodStanding s) {
  switch (s) {
    case PodStanding::joined:
      return "joined";
    case PodStanding::lost:
      return "lost";
    case PodStanding::missing:
      return "missing";
  }
  return "missing";
}

template <class Agent>
class PodRegistry {
 public:
  struct Joined {
    NodeInfo info;
    Agent agent;
  };

  // What the job allows a join to be: open, or closed with the reason (the
  // job ended); and what each pod must bring.
  struct JoinRules {
    std::optional<std::string> closed;
    std::int32_t gpus_required = 0;
  };

  PodRegistry() = default;
  PodRegistry(std::string job_id, std::vector<std::string> expected)
      : job_id_(std::move(job_id)), expected_(std::move(expected)) {
    for (std::size_t i = 0; i < expected_.size(); ++i) index_.emplace(expected_[i], i);
  }

  // `info.pod` joins through `agent`: nullopt when it joined (`rejoined` says
  // whether it had been lost), else why not; a refusal changes nothing.
  std::optional<Refusal> join(const NodeInfo& info, Agent agent, const JoinRules& rules,
                              bool* rejoined = nullptr) {
    if (rules.closed) return Refusal{ReplyCode::refused, *rules.closed};
    if (!index_.count(info.pod))
      return Refusal{ReplyCode::refused, "unknown pod '" + info.pod + "': job " + job_id_ +
                                             " expects " + expected_range("no workers")};
    if (auto it = joined_.find(info.pod); it != joined_.end())
      return Refusal{ReplyCode::refused,
                     "pod " + info.pod + " already joined from " + it->second.info.address, true};
    if (info.gpus < rules.gpus_required)
      return Refusal{ReplyCode::refused, "pod " + info.pod + " has " + std::to_string(info.gpus) +
                                             " GPUs; the job's spec asks for " +
                                             std::to_string(rules.gpus_required)};
    joined_[info.pod] = Joined{info, std::move(agent)};
    ++changes_;
    machines_[info.pod] = info.machine;
    const bool was_lost = lost_.erase(info.pod) > 0;
    if (rejoined) *rejoined = was_lost;
    return std::nullopt;
  }

  // `pod` left (lost, silent or deleted). With `awaited_as_lost` it shows as
  // lost until it joins again (after the start); else as missing (before).
  // Returns its agent, or nullopt when it was not joined (nothing changes).
  std::optional<Agent> leave(const std::string& pod, bool awaited_as_lost) {
    auto it = joined_.find(pod);
    if (it == joined_.end()) return std::nullopt;
    Agent agent = std::move(it->second.agent);
    joined_.erase(it);
    ++changes_;
    if (awaited_as_lost) lost_.insert(pod);
    return agent;
  }

  // " (did you mean 'J-worker-0'?)" for a pod's name without its job's
  // prefix (`worker-0`) or within a typo or two of one; "" otherwise.
  std::string meant(const std::string& name) const {
    std::vector<std::string> names;
    for (const auto& [pod, _] : index_) {
      if (pod.size() > name.size() + 1 &&
          pod.compare(pod.size() - name.size(), name.size(), name) == 0 &&
          pod[pod.size() - name.size() - 1] == '-')
        return " (did you mean " + quote(pod) + "?)";
      names.push_back(pod);
    }
    return did_you_mean(name, names);
  }

  // Which joined pods `atlctl delete -p SPEC` takes ("all", or a comma list
  // of pod names): all of them or none, with the first reason why not.
  std::variant<std::vector<std::string>, Refusal> select_for_delete(const std::string& spec) const {
    std::vector<std::string> pods;
    if (spec == "all") {
      for (const auto& [pod, _] : joined_) pods.push_back(pod);
    } else {
      for (std::string_view item : split_list(spec)) {
        std::string name(item);
        if (name.empty())
          return Refusal{ReplyCode::usage, "-p/--pods: empty pod name in " + quote(spec)};
        if (!index_.count(name))
          return Refusal{ReplyCode::usage, "unknown pod " + quote(name) + meant(name) + ": job " +
                                               job_id_ + " has " +
                                               expected_range("no worker pods")};
        if (!joined_.count(name))
          return Refusal{ReplyCode::refused, "pod " + name + " is not in the job now (" +
                                                 (lost_.count(name) ? "lost" : "not joined yet") +
                                                 "); nothing was deleted"};
        if (std::find(pods.begin(), pods.end(), name) != pods.end())
          return Refusal{ReplyCode::usage, "-p/--pods: pod " + name + " named twice in " +
                                               quote(spec) + "; nothing was deleted"};
        pods.push_back(name);
      }
    }
    if (pods.empty())
      return Refusal{ReplyCode::refused, "no worker pod is in the job now; nothing to delete"};
    return pods;
  }

  const Joined* find(const std::string& pod) const {
    auto it = joined_.find(pod);
    return it == joined_.end() ? nullptr : &it->second;
  }
  // A pod the caller knows joined (throws std::out_of_range otherwise).
  const Joined& at(const std::string& pod) const { return joined_.at(pod); }
  const NodeInfo* info(const std::string& pod) const {
    const Joined* j = find(pod);
    return j ? &j->info : nullptr;
  }
  bool joined(const std::string& pod) const { return joined_.count(pod) > 0; }
  // The joined pods by name, for walks (heartbeats, placement, status).
  const std::map<std::string, Joined>& joined_pods() const { return joined_; }
  std::size_t joined_count() const { return joined_.size(); }
  // Grows with every join and leave (what a view made of the joined pods keys on).
  std::uint64_t changes() const { return changes_; }
  bool all_joined() const { return joined_.size() == expected_.size(); }

  // The first joined pod `pred(agent)` holds for (a down message's source).
  template <class Pred>
  std::optional<std::string> pod_of_agent(Pred pred) const {
    for (const auto& [pod, j] : joined_)
      if (pred(j.agent)) return pod;
    return std::nullopt;
  }

  const std::vector<std::string>& expected() const { return expected_; }
  // The pod's index among the expected pods (its logs/pod-worker-<i>.log).
  std::optional<std::size_t> index_of(const std::string& pod) const {
    auto it = index_.find(pod);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  // "JOB-worker-0 .. JOB-worker-3" (or `none` when the job has no workers).
  std::string expected_range(const std::string& none) const {
    return expected_.empty() ? none : expected_.front() + " .. " + expected_.back();
  }
  // The expected pods not joined now, comma-separated in their order.
  std::string missing() const {
    std::string out;
    for (const auto& pod : expected_) {
      if (joined_.count(pod)) continue;
      if (!out.empty()) out += ", ";
      out += pod;
    }
    return out;
  }
  PodStanding standing(const std::string& pod) const {
    if (joined_.count(pod)) return PodStanding::joined;
    return lost_.count(pod) ? PodStanding::lost : PodStanding::missing;
  }

  // The machine `pod` joined from last (it is kept after the pod leaves).
  const std::string* machine_of(const std::string& pod) const {
    auto it = machines_.find(pod);
    return it == machines_.end() ? nullptr : &it->second;
  }
  // Every machine a pod ever joined from, sorted, each once.
  std::vector<std::string> machines() const {
    std::set<std::string> all;
    for (const auto& [_, machine] : machines_) all.insert(machine);
    return {all.begin(), all.end()};
  }

 private:
  std::string job_id_;
  std::vector<std::string> expected_;
  std::map<std::string, std::size_t> index_;  // expected pod -> its index
  std::map<std::string, Joined> joined_;
  std::uint64_t changes_ = 0;
  std::set<std::string> lost_;
  std::map<std::string, std::string> machines_;  // every pod ever joined -> its machine
};

}  // namespace atl::supervisor
