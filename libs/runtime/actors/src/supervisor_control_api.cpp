// atlctl's commands to the JobSupervisor (status, logs, the debug commands,
// delete, taint, events, dashboard, check/burn): decode, call, answer (the
// JSON views: atl/supervisor/status_view.hpp).
#include "atl/actors/interposition.hpp"
#include "atl/supervisor/status_view.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

caf::message_handler control_api(Actor* self) {
  return {
      [self](status_atom) { return std::string(to_string(self->state.state())); },
      [self](info_atom) {
        if (self->state.config.testing_throw_on_info)
          throw std::runtime_error("injected by ATL_TESTING_SUPERVISOR_THROW");
        return info_json(*self->state.sup, {}, interposition_report());
      },
      [self](info_atom, const StatusPage& page) {
        // Offsets past the end give empty pages; negative offsets are none.
        return info_json(*self->state.sup, page, interposition_report());
      },
      // Log reads go to the head's reader (its own thread): its answer is theirs.
      [self](LogRead& read) { return self->delegate(self->state.config.reader, std::move(read)); },
      [self](debug_stop_atom) -> StopResult {
        auto a = self->state.sup->begin_stop();
        return {wire(a.code), a.text, a.op};
      },
      [self](stop_wait_atom, std::int32_t op) {
        auto& sup = *self->state.sup;
        return now_or_later<Result>(self, [&](auto keep) { return sup.wait_stop(op, keep); });
      },
      [self](debug_run_atom, const std::string& ranks, const std::string& command, bool forced) {
        return now_or_later<RunResult>(self, [&](auto keep) {
          return self->state.sup->start_run(ranks, command, forced, keep);
        });
      },
      [self](run_wait_atom, std::int32_t run, std::int64_t timeout_ms) {
        return now_or_later<RunResult>(self, [&](auto keep) {
          return self->state.sup->wait_run(run, keep, std::chrono::milliseconds(timeout_ms));
        });
      },
      [self](recover_atom) {
        return now_or_later<Result>(self,
                                    [&](auto keep) { return self->state.sup->recover(keep); });
      },
      [self](delete_atom, const std::string& pods) {
        return answer(self->state.sup->delete_pods(pods));
      },
      [self](taint_atom, const std::string& action, const std::string& nodes) {
        return answer(taint_command(*self->state.sup, action, nodes));
      },
      [self](events_atom) { return events_json(*self->state.sup); },
      [self](progress_atom) { return progress_json(*self->state.sup); },
      [self](diagnose_atom, const std::string& ranks, bool with_stacks) {
        return now_or_later<Result>(
            self, [&](auto keep) { return self->state.sup->diagnose(ranks, with_stacks, keep); });
      },
      [self](figures_atom, std::int32_t run) { return answer(run_figures(*self->state.sup, run)); },
      [self](dashboard_atom) { return answer(dashboard_answer(*self->state.sup)); },
      [self](const NodeToolRequest& request) {
        return now_or_later<RunResult>(
            self, [&](auto keep) { return self->state.sup->start_node_tool(request, keep); });
      },
  };
}

}  // namespace atl::supervisor
