// StackLooks: the looks at the ranks' stacks under way, each over the pods
// asked (their agents) until every one answered or failed to. A look is for
// a `Purpose` (the hang watch's round, an atlctl diagnose waiting for its
// answer); the shell asks each agent with the look's id and hands the answer
// back (empty when the agent failed or did not answer in time); the last
// answer gives the look's reports and purpose, once. An answer of a look
// already done, of an agent not asked or asked already answered, is nothing.
//
// Plain C++ over the Supervisor's AgentId; `Purpose` any value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "atl/core/process_messages.hpp"

namespace atl::supervisor {

using LookId = std::int64_t;

template <class Agent, class Purpose>
class StackLooks {
 public:
  struct Done {
    Purpose purpose;
    std::vector<StackReport> reports;
  };

  // A look over `agents` (at least one) for `purpose`: its id.
  LookId begin(Purpose purpose, const std::vector<Agent>& agents) {
    const LookId id = ++last_;
    looks_.emplace(id, Look{std::move(purpose), {agents.begin(), agents.end()}, {}});
    return id;
  }

  // `agent`'s reports for look `id`: the look, once every agent asked answered.
  std::optional<Done> answer(LookId id, Agent agent, std::vector<StackReport> reports) {
    auto it = looks_.find(id);
    if (it == looks_.end() || it->second.waiting.erase(agent) == 0) return std::nullopt;
    auto& got = it->second.reports;
    got.insert(got.end(), std::make_move_iterator(reports.begin()),
               std::make_move_iterator(reports.end()));
    if (!it->second.waiting.empty()) return std::nullopt;
    Done done{std::move(it->second.purpose), std::move(got)};
    looks_.erase(it);
    return done;
  }

  // Every look still waiting, let go (the supervisor ends): their purposes.
  std::vector<Purpose> take_all() {
    std::vector<Purpose> out;
    for (auto& [id, look] : looks_) out.push_back(std::move(look.purpose));
    looks_.clear();
    return out;
  }

  std::size_t under_way() const { return looks_.size(); }

 private:
  struct Look {
    Purpose purpose;
    std::set<Agent> waiting;
    std::vector<StackReport> reports;
  };
  std::map<LookId, Look> looks_;
  LookId last_ = 0;
};

}  // namespace atl::supervisor
