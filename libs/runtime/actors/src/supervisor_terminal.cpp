// The web terminal's shell in the supervisor: the dashboard's relay asks for
// a terminal into a pod; the Supervisor says yes (the terminal's id, and the
// pod's agent, which the relay asks for the shell) or why not; the relay says
// whether the shell started and, once, why it ended. The keystrokes and
// output never pass through here: the relay and the pod's terminal host talk
// directly.
#include "supervisor_state.hpp"

namespace atl::supervisor {

caf::message_handler terminal_api(Actor* self) {
  using Grant = caf::result<std::int32_t, std::string, std::int64_t, caf::actor>;
  return {
      [self](term_open_atom, const std::string& pod, const std::string& who) -> Grant {
        auto opening = self->state.sup->open_terminal(pod, who);
        if (auto* no = std::get_if<Refusal>(&opening))
          return {wire(no->code), no->text, std::int64_t{0}, caf::actor{}};
        const auto [id, agent] = std::get<TerminalOpening>(opening);
        const caf::actor* to = self->state.peers.agents.find(agent);  // null: never
        return {wire(ReplyCode::ok), std::string(), id.value, to ? *to : caf::actor{}};
      },
      [self](term_started_atom, std::int64_t id, bool ok) {
        self->state.sup->terminal_started(TerminalId{id}, ok);
      },
      [self](term_close_atom, std::int64_t id, const std::string& why) {
        self->state.sup->terminal_closed(TerminalId{id}, why);
      },
  };
}

}  // namespace atl::supervisor
