// Stacks from the pods: every pod of a list takes its ranks' stacks (py-spy
// or gdb, bounded), for the hang watch's looks (the Supervisor's TakeStacks)
// and for atlctl diagnose's one-off look (its JSON: status_view.hpp).
#include <functional>
#include <memory>

#include "atl/supervisor/status_view.hpp"
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
    if (const caf::actor* a = st.peers.agents.find(id)) to.push_back(*a);
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

Result diagnose_now(Actor* self, const std::string& ranks, bool with_stacks) {
  auto ask = diagnose_ask(*self->state.sup, ranks);
  if (auto* no = std::get_if<Refusal>(&ask)) return {wire(no->code), no->text};
  auto reply = self->make_response_promise<std::int32_t, std::string>();
  auto a = std::get<DiagnoseAsk>(std::move(ask));
  gather_stacks(
      self, a.agents, [self, reply, a, with_stacks](std::vector<StackReport> reports) mutable {
        reply.deliver(wire(ReplyCode::ok),
                      diagnose_json(*self->state.sup, std::move(reports), a, with_stacks));
      });
  return reply;
}

}  // namespace atl::supervisor
