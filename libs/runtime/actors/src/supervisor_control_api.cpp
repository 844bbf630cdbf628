// atlctl's commands to the JobSupervisor (status, logs, the debug commands,
// delete, taint, events, dashboard, check/burn): decode, call, answer (the
// JSON views: atl/supervisor/status_view.hpp).
#include <nlohmann/json.hpp>

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
      [self](read_atom a, const StreamId& stream, std::int64_t offset, std::int64_t max) {
        return self->delegate(self->state.config.reader, a, stream, offset, max);
      },
      [self](tail_atom a, const StreamId& stream, std::int64_t lines) {
        return self->delegate(self->state.config.reader, a, stream, lines);
      },
      [self](read_many_atom a, std::vector<StreamId>& streams, std::vector<std::int64_t>& offsets,
             std::int64_t max) {
        return self->delegate(self->state.config.reader, a, std::move(streams), std::move(offsets),
                              max);
      },
      [self](read_many_atom a, std::vector<StreamId>& streams, std::vector<std::int64_t>& offsets,
             std::int64_t max, std::int32_t attempt, bool stamped) {
        return self->delegate(self->state.config.reader, a, std::move(streams), std::move(offsets),
                              max, attempt, stamped);
      },
      [self](tail_atom a, const StreamId& stream, std::int64_t lines, std::int32_t attempt,
             bool stamped) {
        return self->delegate(self->state.config.reader, a, stream, lines, attempt, stamped);
      },
      [self](log_since_atom a, std::vector<StreamId>& streams, std::int32_t attempt,
             std::int64_t since_ms) {
        return self->delegate(self->state.config.reader, a, std::move(streams), attempt, since_ms);
      },
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
      [self](dashboard_atom) -> std::tuple<std::int32_t, std::string> {
        const auto& c = self->state.config;
        if (c.dashboard_url.empty())
          return {wire(ReplyCode::failed),
                  "the head serves no dashboard (headnode --dashboard-port off)"};
        nlohmann::json j{{"url", c.dashboard_url}, {"token", c.dashboard_token}};
        // Ray mode: Ray's dashboard, served by atl's behind the same login.
        if (self->state.job().mode == JobMode::ray) j["ray"] = c.dashboard_url + "/ray/";
        return {wire(ReplyCode::ok), j.dump()};
      },
      [self](const NodeToolRequest& request) {
        return now_or_later<RunResult>(
            self, [&](auto keep) { return self->state.sup->start_node_tool(request, keep); });
      },
  };
}

}  // namespace atl::supervisor
