// atlctl's commands to the JobSupervisor (status, logs, the debug commands,
// delete, taint, events, dashboard, check/burn): decode, call, answer (the
// JSON views: atl/supervisor/status_view.hpp).
#include "atl/actors/interposition.hpp"
#include "atl/supervisor/status_view.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

caf::message_handler control_api(Actor* self) {
  return caf::message_handler{
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
      [self](taint_atom, const std::string& action, const std::string& nodes) {
        return answer(taint_command(*self->state.sup, action, nodes));
      },
      [self](events_atom) { return events_json(*self->state.sup); },
      [self](progress_atom) { return progress_json(*self->state.sup); },
      [self](figures_atom, std::int32_t run) { return answer(run_figures(*self->state.sup, run)); },
      [self](dashboard_atom) { return answer(dashboard_answer(*self->state.sup)); },
  }
      .or_else(kept<Result, StopWait, Recover, Diagnose, StateWatch>(self))
      .or_else(kept<RunResult, RunCommand, RunWait, NodeToolRequest>(self))
      .or_else(at_once<DeletePods>(self));
}

}  // namespace atl::supervisor
