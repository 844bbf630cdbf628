// Stacks from the pods: every pod of a list takes its ranks' stacks (py-spy
// or gdb, bounded), for the hang watch's looks (the Supervisor's TakeStacks)
// and for atlctl diagnose's one-off look, answered here as JSON.
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "atl/core/rank_set.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

// What a node may spend on its ranks' stacks, and what the supervisor waits
// for all of them beyond that.
constexpr auto kStackTimeout = std::chrono::seconds(5);
constexpr auto kDiagnosisSlack = std::chrono::seconds(15);

}  // namespace

void gather_stacks(Actor* self, const std::vector<AgentId>& agents,
                   std::function<void(std::vector<StackReport>)> done,
                   const std::vector<std::int32_t>& no_stop) {
  auto& st = self->state;
  std::vector<caf::actor> to;
  for (AgentId id : agents)
    if (auto it = st.agents.find(id); it != st.agents.end()) to.push_back(it->second);
  struct Gather {
    std::size_t pending = 0;
    std::vector<StackReport> reports;
    std::function<void(std::vector<StackReport>)> done;
  };
  auto g = std::make_shared<Gather>(Gather{to.size(), {}, std::move(done)});
  if (to.empty()) {
    g->done({});
    return;
  }
  auto take = [g](std::vector<StackReport> reports) {
    for (auto& r : reports) g->reports.push_back(std::move(r));
    if (--g->pending == 0) g->done(std::move(g->reports));
  };
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(kStackTimeout).count();
  for (const auto& agent : to)
    self->request(agent, kStackTimeout + kDiagnosisSlack, diagnose_atom::value,
                  static_cast<std::int64_t>(ms), no_stop)
        .then([take](std::vector<StackReport>& reports) { take(std::move(reports)); },
              [take](const caf::error&) { take({}); });
}

Result diagnose_now(Actor* self, const std::string& rank_text, bool with_stacks) {
  auto& st = self->state;
  const int world = static_cast<int>(st.code().rank_pods().size());
  if (world == 0)
    return {wire(ReplyCode::refused),
            "job is in state " + std::string(to_string(st.state())) +
                ": no ranks to diagnose (an spmd job's ranks, once started)"};
  std::vector<int> only;
  if (!rank_text.empty() && rank_text != "all") {
    auto ranks = parse_rank_set(rank_text, world);
    if (!ranks) return {wire(ReplyCode::usage), "-r: " + ranks.error()};
    only = std::move(ranks).value();
  }
  auto reply = self->make_response_promise<std::int32_t, std::string>();
  gather_stacks(
      self, st.sup->agents_of_ranks(only),
      [self, reply, only, with_stacks](std::vector<StackReport> reports) mutable {
        auto& st = self->state;
        // A pod takes all of its ranks' stacks: only the ranks asked for count.
        if (!only.empty())
          reports.erase(std::remove_if(reports.begin(), reports.end(),
                                       [&](const StackReport& r) {
                                         return !std::binary_search(only.begin(), only.end(),
                                                                    r.rank);
                                       }),
                        reports.end());
        CollectiveDiagnosis records;
        nlohmann::json j =
            diagnosis_view(st, group_stack_reports(reports, st.sup->hang_job(), &records));
        j["collectives"] = {{"findings", records.findings},
                            {"culprits", records.culprits},
                            {"without_record", records.without_record}};
        std::sort(reports.begin(), reports.end(),
                  [](const StackReport& a, const StackReport& b) { return a.rank < b.rank; });
        nlohmann::json ranks = nlohmann::json::array();
        for (const auto& r : reports) {
          if (r.attempt != st.code().attempt()) continue;
          nlohmann::json rj{{"rank", r.rank},
                            {"pod", st.sup->pod_of_rank(r.rank)},
                            {"state", std::string(1, static_cast<char>(r.state))},
                            {"tool", r.tool},
                            {"top", stack_top(parse_stack_report(r))}};
          if (!r.error.empty()) rj["error"] = r.error;
          if (auto c = parse_collectives(r.collectives)) {
            nlohmann::json groups = nlohmann::json::array();
            for (const auto& g : c->groups)
              groups.push_back({{"group", g.id},
                                {"name", g.name},
                                {"op", g.op},
                                {"entered", g.enqueued},
                                {"completed", g.completed}});
            rj["collectives"] = std::move(groups);
            rj["torch"] = c->torch;
          } else if (!r.collectives_error.empty()) {
            rj["collectives_error"] = r.collectives_error;
          }
          if (with_stacks) rj["stack"] = r.text;
          rj["gpus"] = r.gpus;
          ranks.push_back(std::move(rj));
        }
        j["ranks"] = std::move(ranks);
        // Each outlier's pod's GPUs, as its node's watch sees them.
        nlohmann::json outlier_gpus = nlohmann::json::object();
        const auto& outliers = j["outliers"];
        for (const auto& r : reports)
          if (std::find(outliers.begin(), outliers.end(), r.rank) != outliers.end())
            outlier_gpus[st.sup->pod_of_rank(r.rank)] = r.gpus;
        j["outlier_gpus"] = std::move(outlier_gpus);
        reply.deliver(wire(ReplyCode::ok),
                      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      });
  return reply;
}

}  // namespace atl::supervisor
